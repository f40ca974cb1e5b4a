/**
 * `work`'s outcome, or a rejection with `expired()` once `ms` have passed without one. The work
 * goes on (nothing here can cancel it); its late outcome is ignored, a late failure included, so
 * it is never an unhandled rejection.
 */
export async function withinDeadline<T>(work: Promise<T>, ms: number, expired: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(expired()), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
