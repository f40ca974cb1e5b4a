import { BinaryReader } from '@bufbuild/protobuf/wire';

/** Thrown while decoding a message whose string field is not valid UTF-8. */
export class InvalidUtf8Error extends Error {
  constructor() {
    super('a string field is not valid UTF-8');
    this.name = 'InvalidUtf8Error';
  }
}

const fatal = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeStrictly(bytes: Uint8Array): string {
  try {
    return fatal.decode(bytes);
  } catch {
    throw new InvalidUtf8Error();
  }
}

/** A generated message type, as far as decoding goes. */
export interface DecodableMessage<T> {
  decode(input: BinaryReader | Uint8Array, length?: number): T;
}

/**
 * A decoder for `type` whose string fields must be valid UTF-8, as proto3 requires. The generated
 * `decode` replaces each invalid sequence with U+FFFD, so bad text would be stored changed,
 * silently. A leading U+FEFF is text, as in the generated `decode`.
 *
 * @returns a function that throws InvalidUtf8Error at the first string field that is not valid
 *   UTF-8, and what `decode` throws for bytes that are no message.
 */
export function strictUtf8Decoder<T>(type: DecodableMessage<T>): (bytes: Uint8Array) => T {
  return (bytes) => type.decode(new BinaryReader(bytes, decodeStrictly));
}
