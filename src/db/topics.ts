/**
 * The change topics (changes.ts): what a notification names. On PostgreSQL the database's own
 * triggers send the same topics for every write to these rows (migration 0015), so every writer
 * is heard; the service also sends them itself, to tell its own instance at the commit.
 */
export const topics = {
  user: (id: string): string => `user:${id}`,
  team: (id: string): string => `team:${id}`,
  session: (id: string): string => `session:${id}`,
  /** An OAuth token (access or refresh). */
  token: (id: string): string => `token:${id}`,
  /** A satellite's key, state or desired-state document. */
  satellite: (id: string): string => `satellite:${id}`,
  /** Any global setting. */
  settings: 'settings',
} as const

/** The families, for those that follow several topics of one kind. */
export const families = {
  user: 'user:',
  team: 'team:',
  session: 'session:',
  token: 'token:',
  satellite: 'satellite:',
} as const
