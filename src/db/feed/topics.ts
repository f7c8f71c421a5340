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
  /** A team's installations as its lists show them: their rows, values, reported states, connections, satellites. */
  installations: (teamId: string): string => `installations:${teamId}`,
  /** Which teams a user is a member of, and as what. */
  member: (userId: string): string => `member:${userId}`,
  /** Any write to the catalogue (servers, versions, tags, categories). */
  catalogue: 'catalogue',
  /** Any global setting. */
  settings: 'settings',
  /** Anything at all: what was kept may all be stale (SQLite, when its change stamp moved). */
  everything: '*',
} as const

/** The families, for those that follow several topics of one kind. */
export const families = {
  user: 'user:',
  team: 'team:',
  session: 'session:',
  token: 'token:',
  satellite: 'satellite:',
  installations: 'installations:',
  member: 'member:',
} as const

/**
 * What a user credential's kept answer depends on: the credential itself (`own`: its session or
 * token topic), its user, and the user's default team when there is one.
 */
export function userCredentialTopics(own: string, userId: string, defaultTeamId: string | undefined): string[] {
  return defaultTeamId === undefined ? [own, topics.user(userId)] : [own, topics.user(userId), topics.team(defaultTeamId)]
}
