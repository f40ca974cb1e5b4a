import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { BSON, type Document, ObjectId } from 'mongodb';

/** What a scripted command gets answered with: a reply document, or the connection closed unanswered. */
export type FakeReply = Document | 'hang up';

/**
 * The one member of a replica set `rs0`, speaking just enough of the wire protocol for the driver:
 * the handshake, hello (as primary or as secondary, which a test switches, as an election would),
 * and every other command answered by the test's script, or else as a member in its role does (a
 * secondary refuses writes, and reads that want the primary). No data is kept: a test scripts
 * what a find returns.
 */
export interface FakeReplicaMember {
  /** `mongodb://…/?replicaSet=rs0`. */
  readonly uri: string;
  /** Primary or secondary from the next hello on. A new term each time it becomes primary. */
  role: 'primary' | 'secondary';
  /** Every command but the handshake and hello, with its database, as received. */
  readonly commands: Document[];
  /** Resolves at the next hello answered in `role` (the driver then knows it). */
  nextHelloAs(role: 'primary' | 'secondary'): Promise<void>;
  close(): Promise<void>;
}

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;
const HELLO = new Set(['hello', 'isMaster', 'ismaster']);
const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify', 'createIndexes']);
const BSON_OPTIONS = { useBigInt64: true } as const;

/**
 * Starts a member on a free loopback port. `script` answers each command that is not hello; it
 * returns `undefined` for the default answer (`{ok: 1}`; a find gets an empty batch).
 */
export async function startFakeReplicaMember(script: (command: Document) => FakeReply | undefined): Promise<FakeReplicaMember> {
  const sockets = new Set<Socket>();
  const helloWaiters: Array<{ role: 'primary' | 'secondary'; resolve: () => void }> = [];
  let term = 1;
  let role: 'primary' | 'secondary' = 'primary';
  let connections = 0;
  const commands: Document[] = [];
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const connectionId = (connections += 1);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0));
        pending = pending.subarray(message.length);
        answer(socket, message, connectionId);
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const me = `127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;

  const hello = (connectionId: number): Document => ({
    helloOk: true,
    isWritablePrimary: role === 'primary',
    ismaster: role === 'primary',
    secondary: role === 'secondary',
    setName: 'rs0',
    setVersion: 1,
    hosts: [me],
    me,
    ...(role === 'primary' ? { primary: me, electionId: new ObjectId(term.toString(16).padStart(24, '0')) } : {}),
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId,
    minWireVersion: 0,
    maxWireVersion: 21,
    readOnly: false,
    ok: 1,
  });

  function reply(command: Document, connectionId: number): FakeReply {
    const name = Object.keys(command)[0]!;
    if (HELLO.has(name)) {
      for (const waiter of helloWaiters.splice(0)) {
        if (waiter.role === role) waiter.resolve();
        else helloWaiters.push(waiter);
      }
      return hello(connectionId);
    }
    commands.push(command);
    const scripted = script(command);
    if (scripted !== undefined) return scripted;
    if (role === 'secondary' && WRITES.has(name)) {
      return { ok: 0, code: 10107, codeName: 'NotWritablePrimary', errmsg: 'not primary', errorLabels: ['RetryableWriteError'] };
    }
    const mode = (command.$readPreference as Document | undefined)?.mode as string | undefined;
    if (role === 'secondary' && name === 'find' && (mode === undefined || mode === 'primary')) {
      return { ok: 0, code: 13435, codeName: 'NotPrimaryNoSecondaryOk', errmsg: 'not primary and secondaryOk=false' };
    }
    if (name === 'find') return { cursor: { id: 0n, ns: `${String(command.$db)}.${String(command.find)}`, firstBatch: [] }, ok: 1 };
    if (name === 'insert') return { n: (command.documents as Document[] | undefined)?.length ?? 1, ok: 1 };
    return { ok: 1 };
  }

  function answer(socket: Socket, message: Buffer, connectionId: number): void {
    const requestId = message.readInt32LE(4);
    const opCode = message.readInt32LE(12);
    let command: Document;
    if (opCode === OP_QUERY) {
      const start = message.indexOf(0, 20) + 9; // the collection name, numberToSkip, numberToReturn
      command = BSON.deserialize(message.subarray(start, start + message.readInt32LE(start)), BSON_OPTIONS);
    } else if (opCode === OP_MSG) {
      command = sections(message.subarray(20, message.readUInt32LE(16) & 1 ? message.length - 4 : message.length));
    } else {
      socket.destroy();
      return;
    }
    const answered = reply(command, connectionId);
    if (answered === 'hang up') {
      socket.destroy();
      return;
    }
    const body = BSON.serialize(answered);
    const header = Buffer.alloc(16);
    header.writeInt32LE(requestId + 1_000_000, 4);
    header.writeInt32LE(requestId, 8);
    if (opCode === OP_QUERY) {
      const fields = Buffer.alloc(20);
      fields.writeInt32LE(1, 16); // one document returned
      header.writeInt32LE(OP_REPLY, 12);
      header.writeInt32LE(16 + fields.length + body.length, 0);
      socket.write(Buffer.concat([header, fields, body]));
    } else {
      header.writeInt32LE(OP_MSG, 12);
      header.writeInt32LE(16 + 5 + body.length, 0);
      socket.write(Buffer.concat([header, Buffer.from([0, 0, 0, 0, 0]), body]));
    }
  }

  return {
    uri: `mongodb://${me}/?replicaSet=rs0`,
    get role() {
      return role;
    },
    set role(next) {
      if (next === 'primary' && role !== 'primary') term += 1;
      role = next;
    },
    commands,
    nextHelloAs: (wanted) => new Promise((resolve) => helloWaiters.push({ role: wanted, resolve })),
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/** An OP_MSG's sections: the body document, with each document sequence (kind 1) as an array field. */
function sections(payload: Buffer): Document {
  let command: Document = {};
  const sequences: Document = {};
  for (let offset = 0; offset < payload.length; ) {
    const kind = payload[offset]!;
    if (kind === 0) {
      const size = payload.readInt32LE(offset + 1);
      command = BSON.deserialize(payload.subarray(offset + 1, offset + 1 + size), BSON_OPTIONS);
      offset += 1 + size;
    } else {
      const size = payload.readInt32LE(offset + 1);
      const nameEnd = payload.indexOf(0, offset + 5);
      const name = payload.toString('utf8', offset + 5, nameEnd);
      const documents: Document[] = [];
      for (let at = nameEnd + 1; at < offset + 1 + size; at += payload.readInt32LE(at)) {
        documents.push(BSON.deserialize(payload.subarray(at, at + payload.readInt32LE(at)), BSON_OPTIONS));
      }
      sequences[name] = documents;
      offset += 1 + size;
    }
  }
  return { ...command, ...sequences };
}

/**
 * A script under which every find in `pets` finds `pet` and every change or delete of it matches
 * nothing: a store whose conditional writes always lose, as when other changes of the pet keep
 * coming between its write and its read.
 */
export function everyWriteLoses(pet: Document): (command: Document) => FakeReply | undefined {
  return (command) => {
    if (command.find === 'pets') return { cursor: { id: 0n, ns: `${String(command.$db)}.pets`, firstBatch: [pet] }, ok: 1 };
    if (command.findAndModify === 'pets') return { lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 };
    if (command.delete === 'pets') return { n: 0, ok: 1 };
    return undefined;
  };
}
