import type { Config } from '../../config.js'
import type { SettingRow, SettingsRepository } from '../../db/repositories/settings.js'
import { topics } from '../../db/feed/topics.js'
import { KeptAnswers } from '../../db/feed/kept-answers.js'
import type { ChangeFeed, Db } from '../../db/types.js'
import { errors, type FieldProblem } from '../../http/errors.js'
import type { Clock } from '../../lib/clock.js'
import type { SecretBox } from '../../lib/secret-box.js'
import {
  CORE_GROUPS,
  CORE_SETTINGS,
  defaultValue,
  valueProblem,
  type CoreSettingKey,
  type CoreSettingValue,
  type SettingDefinition,
  type SettingGroup,
  type SettingPrimitive,
} from './definitions.js'
import { environmentSeeds, type SettingChange } from './environment-seeds.js'

export type { SettingChange }

/** The longest the settings are given from memory before their revision is compared again. */
const SETTINGS_MAX_AGE_MS = 60_000

export interface SettingView {
  key: string
  group: string
  type: SettingDefinition['type']
  name: string
  description: string
  encrypted: boolean
  /** The plaintext value; the HTTP layer withholds it for encrypted settings. */
  value: SettingPrimitive
  is_set: boolean
  /** False for a secret stored under another ENCRYPTION_SECRET: it reads as its default meanwhile. */
  readable: boolean
  updated_at: Date
}

interface CachedValue {
  value: SettingPrimitive
  readable: boolean
  row: SettingRow
}

/** Every setting as read at one revision of the table. */
interface Loaded {
  values: ReadonlyMap<string, CachedValue>
  revision: number
}

interface Deps {
  repository: SettingsRepository
  box: SecretBox
  clock: Clock
  config: Config
  /** Change notifications (absent for a command-line tool, which only writes: it then reads the table each time). */
  feed?: ChangeFeed
  definitions?: Readonly<Record<string, SettingDefinition>>
  groups?: readonly SettingGroup[]
}

/** Why a value is refused (a sentence fit for the client), or null when it is acceptable. */
export type SettingCheck = (value: SettingPrimitive) => Promise<string | null>

/**
 * What a write of a setting also changes elsewhere, in the write's own transaction (so the two
 * commit together); it may answer what to do once that transaction has committed.
 */
export type SettingReaction = (value: SettingPrimitive, tx: Db) => Promise<(() => Promise<void>) | void>

export class SettingsService {
  readonly groups: readonly SettingGroup[]
  private readonly definitions: ReadonlyMap<string, SettingDefinition>
  private readonly repository: SettingsRepository
  private readonly box: SecretBox
  private readonly clock: Clock
  private readonly config: Config
  private readonly checks = new Map<string, SettingCheck>()
  private readonly reactions = new Map<string, SettingReaction[]>()
  /**
   * The settings as a kept answer (db/feed/kept-answers.ts): given from memory until a notification
   * says they changed (`settings`, sent by the database for every write, on any instance), or on
   * SQLite until anything changed; then their revision is compared, and the rows read again only
   * when it moved.
   */
  private readonly kept: KeptAnswers<Loaded> | undefined
  /** The last settings read: what a revision is compared with, and what views show. */
  private last: Loaded = { values: new Map(), revision: -1 }
  private loading: Promise<Loaded> | null = null

  constructor({ repository, box, clock, config, feed, definitions = CORE_SETTINGS, groups = CORE_GROUPS }: Deps) {
    this.repository = repository
    this.box = box
    this.clock = clock
    this.config = config
    this.definitions = new Map(Object.entries(definitions))
    this.groups = groups
    this.kept = feed === undefined ? undefined : new KeptAnswers<Loaded>('settings', feed, {
      families: [topics.settings], topicsOf: () => [topics.settings], max: 1, maxAgeMs: SETTINGS_MAX_AGE_MS, now: () => clock.now(),
    })
  }

  /** Seeds every definition (never overwriting), applies the environment seeds, fills the cache. */
  async init(): Promise<void> {
    const now = new Date(this.clock.now())
    const rows = [...this.definitions].map(([key, definition]): SettingRow => ({
      key,
      groupId: definition.group,
      type: definition.type,
      value: this.encode(definition, defaultValue(definition, this.config)),
      encrypted: definition.encrypted === true,
      setAt: null,
      updatedAt: now,
    }))
    await this.repository.seed(rows)
    const seeds = environmentSeeds(this.config)
    const untouched = new Set(await this.repository.neverSet(seeds.map((seed) => seed.key)))
    const applicable = seeds.filter((seed) => untouched.has(seed.key))
    if (applicable.length > 0) await this.update(applicable)
    await this.reload()
  }

  /**
   * A check that needs more than the definition's type and bounds (e.g. a URL whose host must
   * resolve to a public address), run by `update` on every new value of `key` before anything is
   * written; the problem it answers becomes a 400 naming the key.
   */
  addCheck(key: string, check: SettingCheck): void {
    this.checks.set(key, check)
  }

  /**
   * Something that follows `key` (e.g. what may run where): run on every write of it through this
   * service, inside the write's transaction. A write made by another process (the command-line
   * tool) is not seen here; whoever registers a reaction must also catch up on its own.
   */
  onWrite(key: string, reaction: SettingReaction): void {
    this.reactions.set(key, [...(this.reactions.get(key) ?? []), reaction])
  }

  definition(key: string): SettingDefinition | undefined {
    return this.definitions.get(key)
  }

  async get<K extends CoreSettingKey>(key: K): Promise<CoreSettingValue<K>> {
    return (await this.value(key)) as CoreSettingValue<K>
  }

  /** Untyped read, for keys contributed at run time (plugins). */
  async value(key: string): Promise<SettingPrimitive> {
    const entry = (await this.current()).values.get(key)
    if (entry === undefined) throw errors.notFound(`Setting ${key}`)
    return entry.value
  }

  /**
   * The value as `value` would answer it, when that needs no read (the cache is current), else
   * undefined: for checks on every request that should not cost a promise (two-factor/gate.ts).
   */
  peek(key: string): SettingPrimitive | undefined {
    return this.kept?.peek('settings')?.values.get(key)?.value
  }

  /**
   * False while `key` holds a secret the current ENCRYPTION_SECRET cannot decrypt; `get` then
   * answers the default, so a feature needing it acts as not configured.
   */
  async readable(key: string): Promise<boolean> {
    return (await this.current()).values.get(key)?.readable ?? true
  }

  /** The keys `readable` is false for, as of the last load. */
  unreadable(): string[] {
    return [...this.last.values].filter(([, entry]) => !entry.readable).map(([key]) => key)
  }

  async list(): Promise<SettingView[]> {
    const { values } = await this.current()
    return [...this.definitions].map(([key, definition]) => this.view(key, definition, values))
  }

  /** Validates every change, then writes them all in one transaction, with `alongside` (an audit event) in it. */
  async update(changes: SettingChange[], alongside?: (tx: Db) => Promise<void>): Promise<SettingView[]> {
    const problems: FieldProblem[] = []
    const seen = new Set<string>()
    for (const { key, value } of changes) {
      const definition = this.definitions.get(key)
      if (definition === undefined) problems.push({ field: key, message: 'is not a known setting' })
      else if (seen.has(key)) problems.push({ field: key, message: 'appears more than once' })
      else {
        const problem = valueProblem(definition, value)
        if (problem !== null) problems.push({ field: key, message: problem })
      }
      seen.add(key)
    }
    if (problems.length > 0) throw errors.validation(problems, 'Invalid settings.')
    for (const { key, value } of changes) {
      const check = this.checks.get(key)
      const problem = check === undefined ? null : await check(value as SettingPrimitive)
      if (problem !== null) problems.push({ field: key, message: problem })
    }
    if (problems.length > 0) throw errors.validation(problems, 'Invalid settings.')

    const writes = changes.map(({ key, value }) => ({
      key,
      value: this.encode(this.definitions.get(key)!, value as SettingPrimitive),
    }))
    const afterwards: Array<() => Promise<void>> = []
    await this.repository.write(writes, new Date(this.clock.now()), async (tx) => {
      await alongside?.(tx)
      for (const { key, value } of changes) {
        for (const reaction of this.reactions.get(key) ?? []) {
          const then = await reaction(value as SettingPrimitive, tx)
          if (then !== undefined) afterwards.push(then)
        }
      }
    })
    const { values } = await this.reload()
    for (const then of afterwards) await then()
    return changes.map(({ key }) => this.view(key, this.definitions.get(key)!, values))
  }

  private view(key: string, definition: SettingDefinition, values: Loaded['values']): SettingView {
    const entry = values.get(key)
    const value = entry?.value ?? defaultValue(definition, this.config)
    const readable = entry?.readable ?? true
    return {
      key,
      group: definition.group,
      type: definition.type,
      name: definition.name,
      description: definition.description,
      encrypted: definition.encrypted === true,
      value,
      // An unreadable secret is still a stored value: set, though not usable.
      is_set: !readable || value !== '',
      readable,
      updated_at: entry?.row.updatedAt ?? new Date(this.clock.now()),
    }
  }

  /** The settings now: kept, or compared by revision with the last read (and read again when it moved). */
  private async current(): Promise<Loaded> {
    const load = async (): Promise<Loaded> => ((await this.repository.revision()) === this.last.revision ? this.last : this.reload())
    if (this.kept === undefined) return load()
    // Concurrent first reads share one load.
    return (await this.kept.read('settings', () => (this.loading ??= load().finally(() => (this.loading = null)))))!
  }

  private async reload(): Promise<Loaded> {
    const revision = await this.repository.revision()
    const rows = await this.repository.all()
    const values = new Map<string, CachedValue>()
    for (const row of rows) {
      const definition = this.definitions.get(row.key)
      if (definition === undefined) continue
      const decoded = this.decode(definition, row)
      // Readers trust a setting to follow its definition: a value stored before a rule existed
      // (or written past the API) that breaks it reads as the default.
      const value = valueProblem(definition, decoded.value) === null ? decoded.value : defaultValue(definition, this.config)
      values.set(row.key, { ...decoded, value, row })
    }
    this.last = { values, revision }
    return this.last
  }

  private encode(definition: SettingDefinition, value: SettingPrimitive): string {
    const json = JSON.stringify(value)
    return definition.encrypted ? this.box.seal(json) : json
  }

  private decode(definition: SettingDefinition, row: SettingRow): Omit<CachedValue, 'row'> {
    if (definition.encrypted !== true) return { value: JSON.parse(row.value) as SettingPrimitive, readable: true }
    try {
      return { value: JSON.parse(this.box.open(row.value)) as SettingPrimitive, readable: true }
    } catch {
      // Sealed under another ENCRYPTION_SECRET (AES-GCM refuses the tag). A row never set holds
      // the seeded default, so nothing is lost; a value somebody chose is reported unreadable.
      return { value: defaultValue(definition, this.config), readable: row.setAt === null }
    }
  }
}
