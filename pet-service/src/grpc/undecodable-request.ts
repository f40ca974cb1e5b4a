/**
 * Request bytes that are not a valid message. grpc-js answers INTERNAL when a deserializer throws;
 * the pet service answers INVALID_ARGUMENT saying why, so decoding yields an {@link Undecodable}
 * that the unary-call wrapper refuses instead.
 */
import { InvalidUtf8Error } from '@petstore/proto';

/**
 * What {@link tolerantDeserialize} yields for bytes that are not a valid message, so the handler
 * can answer INVALID_ARGUMENT saying why; grpc-js itself would answer INTERNAL.
 */
export class Undecodable {
  constructor(readonly problem: string) {}
}

/**
 * Wraps a message decoder so that undecodable input becomes an {@link Undecodable}, not a throw.
 * Give it a strict one (`strictUtf8Decoder`), so that text that is not valid UTF-8 is refused,
 * never stored with U+FFFD in place of its bytes.
 */
export function tolerantDeserialize<T>(decode: (bytes: Buffer) => T): (bytes: Buffer) => T | Undecodable {
  return (bytes) => {
    try {
      return decode(bytes);
    } catch (error) {
      return new Undecodable(error instanceof InvalidUtf8Error ? error.message : 'is not a valid protobuf message');
    }
  };
}
