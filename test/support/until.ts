/**
 * Reads until `done` holds, for what a test can only observe after the fact (a delivery, a status
 * reached after an answer the test did not wait for). Throws with the last value read, so a
 * failure says what was seen instead of timing out silently.
 */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(v).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
