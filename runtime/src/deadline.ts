/**
 * `work`'s outcome, or a rejection with `expired()` once `ms` have passed without one. The work
 * goes on (nothing here can cancel it); its late outcome is ignored, a late failure included, so
 * it is never an unhandled rejection. One promise and one timer: it is on the gateway's request path.
 */
export function withinDeadline<T>(work: Promise<T>, ms: number, expired: () => Error): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(expired()), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error as Error);
      },
    );
  });
}
