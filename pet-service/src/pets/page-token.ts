import { createHmac, timingSafeEqual } from 'node:crypto';
import { PAGE_TOKEN_PATTERN, PAGE_TOKEN_PROBLEM } from '@petstore/proto';
import type { StoredStatus } from './pet-record';
import { PetServiceError } from './pet-service-error';

/** Where a page ends: the last id returned, under the filter it was returned for. */
export interface PageCursor {
  readonly afterId: bigint;
  readonly status: StoredStatus | undefined;
}

const MAC_BYTES = 12;
const PAYLOAD = /^v1\.(available|pending|sold|all)\.([1-9][0-9]{0,18})$/;

/**
 * Page tokens are opaque to callers: `base64url("v1.<status>.<lastId>" + MAC)`. The MAC is keyed,
 * so a token cannot be forged or edited, and it binds the filter, so a token from one status
 * cannot be replayed against another. Every replica must share the secret.
 */
export class PageTokenCodec {
  constructor(private readonly secret: string) {}

  encode(cursor: PageCursor): string {
    const payload = Buffer.from(`v1.${cursor.status ?? 'all'}.${cursor.afterId}`);
    return Buffer.concat([payload, this.mac(payload)]).toString('base64url');
  }

  /** @throws PetServiceError INVALID_ARGUMENT for anything this codec did not issue for `status`. */
  decode(token: string, status: StoredStatus | undefined): PageCursor {
    return this.resume(this.read(token), status);
  }

  /**
   * The cursor a token holds, with the filter it was issued for, whatever filter it comes with now.
   * @throws PetServiceError INVALID_ARGUMENT for anything this codec did not issue.
   */
  read(token: string): PageCursor {
    if (!PAGE_TOKEN_PATTERN.test(token)) throw invalid(PAGE_TOKEN_PROBLEM);
    const raw = Buffer.from(token, 'base64url');
    if (raw.length <= MAC_BYTES || raw.toString('base64url') !== token) throw invalid(PAGE_TOKEN_PROBLEM);
    const payload = raw.subarray(0, raw.length - MAC_BYTES);
    if (!timingSafeEqual(raw.subarray(raw.length - MAC_BYTES), this.mac(payload))) throw invalid(PAGE_TOKEN_PROBLEM);
    const match = PAYLOAD.exec(payload.toString('latin1'));
    if (match === null) throw invalid(PAGE_TOKEN_PROBLEM);
    return { afterId: BigInt(match[2]!), status: match[1] === 'all' ? undefined : (match[1] as StoredStatus) };
  }

  /** `cursor` (from {@link read}) for the filter `status`. @throws PetServiceError INVALID_ARGUMENT when issued for another. */
  resume(cursor: PageCursor, status: StoredStatus | undefined): PageCursor {
    if (cursor.status !== status) throw invalid('was issued for a different status filter');
    return cursor;
  }

  private mac(payload: Buffer): Buffer {
    return createHmac('sha256', this.secret).update(payload).digest().subarray(0, MAC_BYTES);
  }
}

function invalid(problem: string): PetServiceError {
  return PetServiceError.invalidArgument('page_token', problem);
}
