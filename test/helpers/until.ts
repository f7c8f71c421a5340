/** Resolves once `condition` holds, checking every few milliseconds; throws after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, { timeoutMs = 5_000, what = 'the condition' } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}
