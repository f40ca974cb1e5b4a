import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';

/*
 * The few grpc.testing messages (grpc-go's interop/grpc_testing/messages.proto) that the unary
 * interop cases send and read, written field by field on @bufbuild/protobuf's wire primitives.
 * Why not generated: the grpc-go module ships no .proto files (only their .pb.go), so generating
 * would mean vendoring grpc's three .proto files, a buf template, a generated folder and a CI
 * freshness check, for five fields. The field numbers are those of messages.pb.go's struct tags at
 * v1.85.0. The cases check this codec as they run: grpc-go fails a call whose request it cannot
 * parse, and large_unary's response must decode to exactly 314159 zero bytes.
 */

/** grpc.testing.PayloadType: COMPRESSABLE, the only type grpc-go's server answers. */
export const COMPRESSABLE = 0;

/** grpc.testing.SimpleRequest's fields that the unary cases set. */
export interface SimpleRequest {
  /** response_size = 2 */
  readonly responseSize?: number;
  /** payload = 3: Payload { body = 2 } */
  readonly payloadBody?: Uint8Array;
  /** response_status = 7: EchoStatus { code = 1, message = 2 } */
  readonly responseStatus?: { readonly code: number; readonly message: string };
}

/** grpc.testing.SimpleResponse's payload = 1: Payload { type = 1, body = 2 }. */
export interface SimpleResponse {
  readonly payload?: { readonly type: number; readonly body: Uint8Array };
}

export function encodeSimpleRequest(request: SimpleRequest): Uint8Array {
  const writer = new BinaryWriter();
  if (request.responseSize !== undefined) writer.tag(2, WireType.Varint).int32(request.responseSize);
  if (request.payloadBody !== undefined) writer.tag(3, WireType.LengthDelimited).fork().tag(2, WireType.LengthDelimited).bytes(request.payloadBody).join();
  if (request.responseStatus !== undefined) {
    const { code, message } = request.responseStatus;
    writer.tag(7, WireType.LengthDelimited).fork().tag(1, WireType.Varint).int32(code).tag(2, WireType.LengthDelimited).string(message).join();
  }
  return writer.finish();
}

/** Decodes a SimpleResponse; fields other than payload are skipped, a malformed one throws. */
export function decodeSimpleResponse(bytes: Uint8Array): SimpleResponse {
  const reader = new BinaryReader(bytes);
  let payload: SimpleResponse['payload'];
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1 && wireType === WireType.LengthDelimited) payload = decodePayload(reader.bytes());
    else reader.skip(wireType, field);
  }
  return { payload };
}

function decodePayload(bytes: Uint8Array): { type: number; body: Uint8Array } {
  const reader = new BinaryReader(bytes);
  let type = 0;
  let body: Uint8Array = new Uint8Array(0);
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1 && wireType === WireType.Varint) type = reader.int32();
    else if (field === 2 && wireType === WireType.LengthDelimited) body = reader.bytes();
    else reader.skip(wireType, field);
  }
  return { type, body };
}
