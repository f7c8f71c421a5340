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

/**
 * What a user credential's kept answer depends on: the credential itself (`own`: its session or
 * token topic), its user, and the user's default team when there is one.
 */
export function userCredentialTopics(own: string, userId: string, defaultTeamId: string | undefined): string[] {
  return defaultTeamId === undefined ? [own, topics.user(userId)] : [own, topics.user(userId), topics.team(defaultTeamId)]
}
