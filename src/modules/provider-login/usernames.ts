/**
 * Usernames for new provider accounts: the provider login
 * cleaned up, then `-2`, `-3`… until one is free.
 */
export function* usernameCandidates(login: string): Generator<string> {
  let base = login.replace(/[^a-zA-Z0-9_-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40)
  if (base.length < 3) base = `user-${base}`.replace(/-$/, '').padEnd(3, '0')
  yield base
  for (let n = 2; n < 10_000; n++) yield `${base}-${n}`
}
