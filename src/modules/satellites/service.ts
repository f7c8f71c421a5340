import type { RegistrationCaller, SatelliteCaller } from '../../auth/caller.js'
import { SATELLITE_KEY_PREFIX } from '../../auth/credentials-from-request.js'
import { newId } from '../../db/ids.js'
import type { RegistrationTokensRepository } from '../../db/repositories/registration-tokens.js'
import type { ReportedStatus, SatelliteFilter, SatelliteIsolation, SatelliteRow, SatellitesRepository } from '../../db/repositories/satellites.js'
import type { TeamsRepository } from '../../db/repositories/teams.js'
import type { Database, Db } from '../../db/types.js'
import { topics } from '../../db/feed/topics.js'
import { errors } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import { randomToken, type Digester } from '../../lib/tokens.js'
import { desiredStamps, satelliteTopic } from '../../db/repositories/desired-stamps.js'
import { isUsablePublicKey } from './sealing.js'
import type { AuditLog } from '../audit/service.js'
import { mayActOn, type SatelliteActor } from './actor.js'
import { invalidRegistrationToken, rowRefusal } from './registration-tokens.js'
import type { SatelliteMetrics, SatelliteSystemInfo } from '../../formats/satellite-reports.js'

/** A satellite that has not sent a heartbeat for this long is shown `offline`. */
export const OFFLINE_AFTER_MS = 90_000
/** What satellites are told: heartbeat every 30 s, three missed ones make them offline. */
export const HEARTBEAT_INTERVAL_SECONDS = 30
/** A key is `service_satkey_` and 43 base64url characters; anything much longer is not one. */
const MAX_KEY_SECRET_LENGTH = 128

export interface Registration {
  name: string
  capabilities?: string[]
  satellite_url?: string
  system_info?: SatelliteSystemInfo
  public_key?: string
  isolation?: SatelliteIsolation
  runtimes?: string[]
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])

/**
 * A satellite's URL is where MCP clients send their tokens: https, except on a loopback host
 * (a satellite on the same machine as its clients, as in development). No query or fragment:
 * endpoint paths are appended to it. Answers the URL without a trailing slash.
 */
export function checkSatelliteUrl(value: string): string {
  const url = new URL(value)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw errors.validation([{ field: 'satellite_url', message: 'must be https, or http on a loopback host (127.0.0.1, [::1], localhost)', in: 'body' }])
  }
  if (url.username !== '' || url.password !== '') throw errors.validation([{ field: 'satellite_url', message: 'must not hold credentials', in: 'body' }])
  return value.replace(/\/+$/, '')
}

/** A registration that brings another key than the one held replaces it (a first key, or none, does not). */
const keyReplaced = (held: string | null, brought: string | null): boolean => held !== null && brought !== null && held !== brought

export interface Heartbeat {
  status: ReportedStatus
  system_metrics: SatelliteMetrics
  version?: string
  /** Absent: unchanged. */
  isolation?: SatelliteIsolation
  /** Absent: unchanged. */
  runtimes?: string[]
}

/** Satellites: pairing, their keys, heartbeats and management. No Fastify types here. */
export class SatelliteService {
  constructor(private readonly deps: {
    database: Database; satellites: SatellitesRepository; tokens: RegistrationTokensRepository; teams: TeamsRepository
    digest: Digester; audit: AuditLog; clock: Clock
  }) {}

  /**
   * Pairs a satellite, in one transaction: create it (or re-register the one of that name in the
   * same scope and team: new key, the old one dies), then spend the token with one conditional
   * update. A refusal anywhere rolls back both, so a failed registration leaves no satellite and
   * does not spend the token.
   */
  async register(token: RegistrationCaller, input: Registration, ip: string): Promise<{ satellite: SatelliteRow; apiKey: string }> {
    const { database, satellites, tokens, digest, audit } = this.deps
    const secret = randomToken()
    const now = this.now()
    const details = {
      keyDigest: digest(secret), capabilities: input.capabilities ?? [],
      satelliteUrl: input.satellite_url === undefined ? null : checkSatelliteUrl(input.satellite_url), publicKey: input.public_key ?? null,
      systemInfo: input.system_info ?? null, registeredAt: now, updatedAt: now,
      // What it says now: a re-registration without them goes back to the defaults.
      isolation: input.isolation ?? 'none', runtimes: input.runtimes ?? [],
    }
    if (input.public_key !== undefined && !(await isUsablePublicKey(input.public_key))) {
      throw errors.validation([{ field: 'public_key', message: 'is not an X25519 public key', in: 'body' }])
    }
    const satellite = await database.transaction(async (tx) => {
      const rows = satellites.with(tx)
      // A concurrent registration may create or delete the name between our read and write: read again.
      for (let attempt = 0; attempt < 3; attempt++) {
        const existing = await rows.findByName(input.name)
        if (existing !== undefined) {
          if (existing.satelliteType !== token.scope || existing.teamId !== token.teamId) {
            throw errors.conflict('SATELLITE_NAME_TAKEN', `A satellite named "${input.name}" belongs to another ${existing.satelliteType === 'team' ? 'team' : 'scope'}; choose another name.`)
          }
          if (existing.disabledAt !== null) throw errors.conflict('SATELLITE_DISABLED', `The satellite "${input.name}" is disabled; an administrator must enable it before it can register again.`)
        }
        const row = existing === undefined
          ? await rows.insert({
            id: newId(), name: input.name, satelliteType: token.scope, teamId: token.teamId, status: 'inactive', disabledAt: null,
            systemMetrics: null, version: null, lastHeartbeatAt: null, createdAt: now, desiredStamp: 0,
            publicKeyChangedAt: null, offlineAt: null, ...details,
          })
          : await rows.reRegister(existing.id, { ...details, ...(keyReplaced(existing.publicKey, details.publicKey) ? { publicKeyChangedAt: now } : {}) })
        if (row === null) continue
        // A satellite registering again may bring a new key or URL: its document is sealed and addressed anew.
        if (existing !== undefined) {
          await desiredStamps(database, tx).satellites([row.id])
          await this.tellLists(row.id, tx)
        }
        if (!(await tokens.with(tx).spend(token.tokenId, row.id, now))) {
          throw invalidRegistrationToken(rowRefusal(await tokens.with(tx).find(token.tokenId), now) ?? 'used')
        }
        await audit.record('satellite.registered', {
          ip, target: row.id,
          details: { name: row.name, satellite_type: row.satelliteType, team_id: row.teamId, token_id: token.tokenId, re_registered: existing !== undefined },
        }, tx)
        return row
      }
      throw errors.conflict('SATELLITE_NAME_TAKEN', `The satellite name "${input.name}" is being registered concurrently; try again.`)
    })
    return { satellite, apiKey: `${SATELLITE_KEY_PREFIX}${secret}` }
  }

  /** The credential check of satellite routes: one indexed lookup by the key's digest. */
  async verifyKey(secret: string): Promise<SatelliteCaller | null> {
    if (secret.length === 0 || secret.length > MAX_KEY_SECRET_LENGTH) return null
    const owner = await this.deps.satellites.findByKeyDigest(this.deps.digest(secret))
    return owner === undefined ? null : { kind: 'satellite', satelliteId: owner.id, teamId: owner.teamId, disabled: owner.disabledAt !== null }
  }

  async heartbeat(id: string, report: Heartbeat): Promise<SatelliteRow> {
    const now = this.now()
    const before = await this.deps.satellites.find(id)
    const row = await this.deps.satellites.heartbeat(id, {
      status: report.status, metrics: report.system_metrics, version: report.version, isolation: report.isolation, runtimes: report.runtimes, now,
    })
    if (row !== null) {
      if (before === undefined || shownDifferently(before, row, now)) await this.tellLists(id)
      return row
    }
    // Disabled or deleted since its key was checked.
    if ((await this.deps.satellites.find(id)) !== undefined) throw errors.satelliteDisabled()
    throw errors.unauthorized()
  }

  /** A clean stop: the satellite reads `offline`, and its installations `unknown`, until its next heartbeat. */
  async markOffline(id: string): Promise<SatelliteRow> {
    const row = await this.deps.satellites.markOffline(id, this.now())
    if (row !== null) {
      await this.tellLists(id)
      return row
    }
    if ((await this.deps.satellites.find(id)) !== undefined) throw errors.satelliteDisabled()
    throw errors.unauthorized()
  }

  list(filter: Omit<SatelliteFilter, 'silentSince'>) {
    return this.deps.satellites.list({ ...filter, silentSince: this.silentSince() })
  }

  /** Global admins see every satellite, team admins their team's; anyone else gets 404. */
  async get(id: string, actor: SatelliteActor): Promise<SatelliteRow> {
    const row = await this.deps.satellites.find(id)
    if (row === undefined || !(await mayActOn(actor, row.teamId, { global: 'satellites.view', team: 'team.satellites.view' }, this.deps.teams))) {
      throw errors.notFound('Satellite')
    }
    return row
  }

  /**
   * `disabled` refuses its key at once; `active` enables it again. Its stored status is left alone
   * either way, so once enabled it shows what its heartbeats said: the last one's status while it
   * is under 90 s old, then `offline` (or `inactive` if it never sent one).
   */
  async setStatus(id: string, status: 'disabled' | 'active', actor: SatelliteActor): Promise<SatelliteRow> {
    const { database, satellites, audit } = this.deps
    return database.transaction(async (tx) => {
      const current = await satellites.with(tx).find(id)
      if (current === undefined) throw errors.notFound('Satellite')
      const disabling = status === 'disabled'
      if (disabling === (current.disabledAt !== null)) return current
      const row = await satellites.with(tx).setDisabled(id, disabling ? this.now() : null, this.now())
      if (row === null) throw errors.notFound('Satellite')
      // A held long-poll of the satellite answers at once (403 once disabled).
      await desiredStamps(database, tx).satellites([id])
      await this.tellLists(id, tx)
      await audit.record(disabling ? 'satellite.disabled' : 'satellite.enabled', { actorId: actor.userId, ip: actor.ip, target: id, details: { name: row.name } }, tx)
      return row
    })
  }

  /** Deletes it; its key dies with the row. */
  async delete(id: string, actor: SatelliteActor): Promise<void> {
    const { database, satellites, audit } = this.deps
    await database.transaction(async (tx) => {
      await this.tellLists(id, tx)
      const row = await satellites.with(tx).delete(id)
      if (row === null) throw errors.notFound('Satellite')
      // A held long-poll of the satellite answers at once (401: its key is gone).
      await database.changes.notify(tx, satelliteTopic(id))
      await audit.record('satellite.deleted', { actorId: actor.userId, ip: actor.ip, target: id, details: { name: row.name, satellite_type: row.satelliteType, team_id: row.teamId } }, tx)
    })
  }

  /**
   * The resource identifier (RFC 8707) of the MCP endpoints a satellite serves, `<satellite_url>/mcp`:
   * the audience of the only tokens it learns about by introspection. Null without a URL (or satellite).
   */
  async mcpResource(id: string): Promise<string | null> {
    const url = (await this.deps.satellites.find(id))?.satelliteUrl
    return url === undefined || url === null ? null : `${url}/mcp`
  }

  /**
   * Tells this instance that the installation lists of the teams placed on the satellite changed
   * (what they show of it: online or not, its name, URL or key), at the commit of `tx` or at once.
   * The database's trigger tells every instance the same (migration 0024 on PostgreSQL), but only
   * once its notification arrives: this makes the instance that took the write answer with it at
   * its next request.
   */
  private async tellLists(id: string, tx?: Db): Promise<void> {
    const { database, satellites } = this.deps
    const executor = tx ?? database.db
    for (const teamId of await satellites.with(executor).teamsPlacedOn(id)) database.changes.tell(executor, topics.installations(teamId))
  }

  /** Heartbeats before this instant make a reporting satellite `offline`. */
  silentSince(): Date {
    return new Date(this.deps.clock.now() - OFFLINE_AFTER_MS)
  }

  private now(): Date {
    return new Date(this.deps.clock.now())
  }
}

/** Whether a heartbeat changed what installation lists show of the satellite (as the database's trigger decides). */
function shownDifferently(before: SatelliteRow, after: SatelliteRow, now: Date): boolean {
  return before.status !== after.status || before.offlineAt !== null || before.lastHeartbeatAt === null ||
    now.getTime() - before.lastHeartbeatAt.getTime() >= OFFLINE_AFTER_MS
}
