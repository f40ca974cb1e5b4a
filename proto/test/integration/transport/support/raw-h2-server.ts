import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/*
 * An HTTP/2 server written frame by frame on a TCP socket, for what node:http2 (nghttp2) never
 * sends: a frame larger than the peer's SETTINGS_MAX_FRAME_SIZE. It speaks just enough HTTP/2 for
 * a client to open a stream: its SETTINGS, the ACKs of the client's SETTINGS and PINGs, and, to
 * each request's HEADERS, response headers in HPACK literals and then one DATA frame a byte longer
 * than the client allows.
 */

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const DATA = 0x0;
const HEADERS = 0x1;
const SETTINGS = 0x4;
const PING = 0x6;
const GOAWAY = 0x7;
const ACK = 0x1;
const END_HEADERS = 0x4;
const SETTINGS_MAX_FRAME_SIZE = 0x5;
const DEFAULT_MAX_FRAME_SIZE = 16_384;

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([header, payload]);
}

/** An HPACK integer with a 7-bit prefix (RFC 7541 §5.1), for string lengths, Huffman bit 0. */
function hpackLength(length: number): Buffer {
  if (length < 127) return Buffer.from([length]);
  const bytes = [127];
  let rest = length - 127;
  while (rest >= 128) {
    bytes.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** Header fields as "literal without indexing, new name" (RFC 7541 §6.2.2): no table state. */
function hpackLiterals(fields: ReadonlyArray<readonly [string, string]>): Buffer {
  return Buffer.concat(
    fields.flatMap(([name, value]) => [Buffer.from([0x00]), hpackLength(name.length), Buffer.from(name), hpackLength(value.length), Buffer.from(value)]),
  );
}

export interface RawH2Server {
  readonly port: number;
  /** Connections open now, accepted so far, and closed so far. */
  openSockets(): number;
  readonly socketsAccepted: number;
  readonly socketsClosed: number;
  /** The error codes of the GOAWAY frames clients sent. */
  readonly goawayCodes: readonly number[];
  /** The DATA frame length sent to each stream: the client's SETTINGS_MAX_FRAME_SIZE plus one. */
  readonly oversizedFrames: readonly number[];
  close(): Promise<void>;
}

export async function startOversizedFrameServer(): Promise<RawH2Server> {
  const sockets = new Set<Socket>();
  const goawayCodes: number[] = [];
  const oversizedFrames: number[] = [];
  let accepted = 0;
  let closed = 0;
  const server = createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      closed += 1;
    });
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    let prefaceRead = false;
    let maxFrameSize = DEFAULT_MAX_FRAME_SIZE;
    socket.write(frame(SETTINGS, 0, 0, Buffer.alloc(0)));
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (!prefaceRead) {
        if (buffered.length < PREFACE.length) return;
        if (!buffered.subarray(0, PREFACE.length).equals(PREFACE)) {
          socket.destroy();
          return;
        }
        buffered = buffered.subarray(PREFACE.length);
        prefaceRead = true;
      }
      while (buffered.length >= 9) {
        const length = buffered.readUIntBE(0, 3);
        if (buffered.length < 9 + length) return;
        const type = buffered[3]!;
        const flags = buffered[4]!;
        const streamId = buffered.readUInt32BE(5) & 0x7fffffff;
        const payload = buffered.subarray(9, 9 + length);
        buffered = buffered.subarray(9 + length);
        if (type === SETTINGS && (flags & ACK) === 0) {
          for (let offset = 0; offset + 6 <= payload.length; offset += 6) {
            if (payload.readUInt16BE(offset) === SETTINGS_MAX_FRAME_SIZE) maxFrameSize = payload.readUInt32BE(offset + 2);
          }
          socket.write(frame(SETTINGS, ACK, 0, Buffer.alloc(0)));
        } else if (type === PING && (flags & ACK) === 0) {
          socket.write(frame(PING, ACK, 0, payload));
        } else if (type === GOAWAY) {
          goawayCodes.push(payload.readUInt32BE(4));
        } else if (type === HEADERS) {
          const headers = hpackLiterals([
            [':status', '200'],
            ['content-type', 'application/grpc'],
          ]);
          // A frame's length has 24 bits: a client that allows the most cannot be sent more.
          if (maxFrameSize >= 0xffffff) {
            socket.destroy();
            return;
          }
          oversizedFrames.push(maxFrameSize + 1);
          socket.write(frame(HEADERS, END_HEADERS, streamId, headers));
          socket.write(frame(DATA, 0, streamId, Buffer.alloc(maxFrameSize + 1)));
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    openSockets: () => sockets.size,
    get socketsAccepted() {
      return accepted;
    },
    get socketsClosed() {
      return closed;
    },
    goawayCodes,
    oversizedFrames,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
