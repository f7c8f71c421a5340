import { KeptAnswers, keptAnswers } from '../../db/feed/kept-answers.js'
import { families, topics } from '../../db/feed/topics.js'
import type { Database } from '../../db/types.js'
import type { Clock } from '../../lib/clock.js'
import type { InstallationPage } from '../../db/repositories/installations.js'
import { OFFLINE_AFTER_MS } from '../satellites/service.js'

/** The most lists kept by one instance (a page of 20 is about 36 KB of views), and for how long at most. */
const MAX_LISTS = 2_000
const MAX_AGE_MS = 60_000

/** Which list, for whom: a team's, or every team of a member (or one of them). */
export type ListKey = { kind: 'team'; teamId: string; viewer: string } | { kind: 'mine' | 'client-config'; viewer: string; teamId: string | undefined }

interface Kept<T> {
  list: T
  topics: string[]
  /** When it stops being the answer on its own: the first of its satellites turns offline then. */
  until: number
}

/**
 * The installation lists an instance answers again unchanged: what the command-line client and
 * every MCP client configuration read, over and over, while nothing changes. A list is one answer
 * of the kept-answers mechanism (db/feed/kept-answers.ts), ended by the change notifications of what it
 * shows — each of its teams' installations (their rows, values, reported states, connections and
 * satellites), the teams themselves, the member's teams for a member's list, the catalogue and the
 * settings — which the database's triggers send for every writer (on SQLite, any change ends all).
 * It also follows the clock: a satellite turns offline 90 s after its last heartbeat, so a list
 * that shows one online is kept until then at most.
 */
export class KeptLists<T> {
  private readonly kept: KeptAnswers<Kept<T>>

  constructor(database: Database, private readonly clock: Clock, name: string) {
    this.kept = keptAnswers(database, name, () => new KeptAnswers<Kept<T>>(name, database.changes, {
      families: [families.installations, families.member, families.team, topics.catalogue, topics.settings],
      topicsOf: (answer) => answer.topics,
      validForMs: (answer) => answer.until - clock.now(),
      max: MAX_LISTS,
      maxAgeMs: MAX_AGE_MS,
      now: () => clock.now(),
    }))
  }

  /**
   * The list for `key`, kept or `build`t: `build` answers the list, the rows it was made from and
   * the teams whose changes end it (for a member's whole list, every team they are a member of).
   */
  async read(key: ListKey, limit: number, offset: number, build: () => Promise<{ list: T; rows: InstallationPage['rows']; teams: readonly string[] }>): Promise<T> {
    const name = `${key.kind}\n${key.viewer}\n${key.teamId ?? ''}\n${limit}\n${offset}`
    const answer = await this.kept.read(name, async () => {
      const { list, rows, teams } = await build()
      const ends = [topics.catalogue, topics.settings, ...teams.flatMap((teamId) => [topics.installations(teamId), topics.team(teamId)])]
      if (key.kind !== 'team') ends.push(topics.member(key.viewer))
      return { list, topics: ends, until: this.onlineUntil(rows) }
    })
    return answer!.list
  }

  /** The instant the first satellite of the page shown online turns offline, unless it reports again. */
  private onlineUntil(rows: InstallationPage['rows']): number {
    const now = this.clock.now()
    let until = Infinity
    for (const { satellite } of rows) {
      const heartbeat = satellite?.lastHeartbeatAt?.getTime()
      if (heartbeat === undefined || satellite!.offlineAt !== null) continue
      const offlineAt = heartbeat + OFFLINE_AFTER_MS
      if (offlineAt > now) until = Math.min(until, offlineAt)
    }
    return until
  }
}
