import { Transform, type TransformCallback } from 'node:stream';

/**
 * Passes a request body on until more than `limit` bytes have arrived. The chunk that crosses the
 * limit is never passed on: `onExceeded` is called instead and the stream is destroyed, without
 * ending, so what it was piped into never sees a complete body.
 */
export class BodyLimit extends Transform {
  private received = 0;

  constructor(
    private readonly limit: number,
    private readonly onExceeded: () => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.received += chunk.length;
    if (this.received <= this.limit) {
      callback(null, chunk);
      return;
    }
    this.onExceeded();
    this.destroy();
  }
}
