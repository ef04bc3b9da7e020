// Kept apart from receiver.ts: importing nock intercepts every http.request of the test process, and a
// pass-through request only connects once its body is complete, which tests of real processes must not have.

/** Waits until `check` holds, polling; false on timeout. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}
