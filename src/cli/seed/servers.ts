import { randomBytes } from 'node:crypto'
import { v7 as uuidv7 } from 'uuid'
import { slugify } from '../../lib/slug.js'
import { normalizePackages, type ServerPackage, type ServerRemote } from '../../formats/catalogue-entries.js'
import { parseVersion } from '../../modules/catalogue/semver-key.js'
import { derivedSlugBase, unusableSlug } from '../../modules/catalogue/slugs.js'
import { caseKey } from '../../db/repositories/server-filters.js'
import type { Database } from '../../db/types.js'
import type { SeededRandom } from './random.js'
import { ACCESS, ACTIONS, AGENTS, AUDIENCES, FEATURES, FIRST_NAMES, FRAMEWORKS, GENERAL_TAGS, LANGUAGES, LAST_NAMES, LICENSES, OBJECTS, ORG_HEADS, ORG_TAILS, PRODUCTS, QUALIFIERS, ROLES, type Product } from './vocabulary.js'

const TWO_YEARS_MS = 2 * 365 * 24 * 3600 * 1000

type Tables = Database['t']
type ServerInsert = Tables['mcpServers']['$inferInsert']
type VersionInsert = Tables['mcpServerVersions']['$inferInsert']

export interface Planned {
  server: ServerInsert & { id: string; slug: string; tags: string[] }
  versions: VersionInsert[]
}

const PRODUCT_WEIGHT = PRODUCTS.reduce((sum, p) => sum + p.weight, 0)
const LANGUAGE_WEIGHT = LANGUAGES.reduce((sum, l) => sum + l.weight, 0)
const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)
const compact = (text: string) => slugify(text, 60, 'mcp')

interface Organization { name: string; slug: string }

function organization(random: SeededRandom): Organization {
  const head = random.pick(ORG_HEADS)
  const tail = random.pick(ORG_TAILS)
  return { name: `${capitalize(head)} ${tail === 'io' || tail === 'hq' || tail === 'ai' ? tail.toUpperCase() : capitalize(tail)}`, slug: `${head}-${tail}` }
}

/** A person's handle on a code host, as an owner of personal projects. */
function person(random: SeededRandom): { name: string; handle: string } {
  const first = random.pick(FIRST_NAMES)
  const last = random.pick(LAST_NAMES)
  const handle = random.pick([`${first}${last}`, `${first.charAt(0)}${last}`, `${first}-${last}`, `${last}${random.between(1, 99)}`]).toLowerCase()
  return { name: `${first} ${last}`, handle }
}

/** Generates servers one after the other; names are kept unique within the run as far as reasonable. */
export class ServerFactory {
  private readonly names = new Set<string>()
  /** The next number to try after a name taken in all its variants. */
  private readonly nextNumber = new Map<string, number>()
  private readonly slugs: Set<string>
  private readonly nextSuffix = new Map<string, number>()

  constructor(
    private readonly random: SeededRandom,
    private readonly categoryIds: Map<string, string>,
    private readonly seededCategoryIds: string[],
    takenSlugs: Iterable<string>,
    private readonly withVersions: boolean,
    private readonly now: number,
    private readonly total: number,
  ) {
    this.slugs = new Set(takenSlugs)
  }

  /** UUIDv7 of the given time; the random part from a pool of crypto bytes (fresh ids on every run). */
  private id(msecs: number): string {
    if (this.entropyAt + 16 > this.entropy.length) {
      this.entropy = randomBytes(16 * 4096)
      this.entropyAt = 0
    }
    const random = this.entropy.subarray(this.entropyAt, (this.entropyAt += 16))
    return uuidv7({ msecs, random })
  }

  private entropy = Buffer.alloc(0)
  private entropyAt = 0

  /**
   * The `index`-th server of the run. Creation times grow with the index over the past two years,
   * more of them recently (a catalogue that grows), so ids (UUIDv7 of the creation time) ascend
   * within a run, as they would had the servers been created one after the other.
   */
  make(index: number): Planned {
    const r = this.random
    const product = r.weighted(PRODUCTS, (p) => p.weight, PRODUCT_WEIGHT)
    const org = organization(r)
    const owner = r.chance(0.3) ? person(r) : null
    const ownerHandle = owner?.handle ?? org.slug
    const role = r.pick(ROLES)
    const name = this.name(product, role, org)
    const slug = this.slug(name)

    const { language, runtimes } = r.weighted(LANGUAGES, (l) => l.weight, LANGUAGE_WEIGHT)
    const runtime = r.pick(runtimes)
    const hasRemote = r.chance(0.15)
    const transportType = hasRemote ? (r.chance(0.75) ? 'http' as const : 'sse' as const) : r.weighted(['stdio', 'http', 'sse'] as const, (t) => (t === 'stdio' ? 80 : t === 'http' ? 15 : 5), 100)
    const repoName = compact(`${product.name}-mcp${r.chance(0.3) ? `-${role}` : ''}`)
    const tags = this.tags(product, language)
    const description = this.description(product, language)
    const createdAt = this.now - TWO_YEARS_MS + Math.floor(Math.sqrt((index + r.next()) / Math.max(this.total, 1)) * TWO_YEARS_MS)
    const updatedAt = createdAt + Math.floor(r.next() ** 3 * (this.now - createdAt))
    const id = this.id(createdAt)
    const packageVersion = `${r.between(0, 3)}.${r.between(0, 20)}.${r.between(0, 12)}`
    const packages = this.packages(product, language, runtime, org, repoName, packageVersion)
    const remotes: ServerRemote[] = hasRemote
      ? [{ type: transportType === 'sse' ? 'sse' : 'streamable-http', url: `https://${org.slug}.example.com/mcp/${slug}${transportType === 'sse' ? '/sse' : ''}` }]
      : []

    const status = r.weighted(['active', 'deprecated', 'maintenance', 'disabled'] as const, (s) => (s === 'active' ? 90 : s === 'deprecated' ? 5 : s === 'maintenance' ? 3 : 2), 100)
    const categoryName = product.category
    const categoryId = r.chance(0.04) || this.seededCategoryIds.length === 0
      ? null
      : this.categoryIds.get(categoryName.toLowerCase()) ?? r.pick(this.seededCategoryIds)

    const serverLanguage = r.chance(0.95) ? language : null
    const serverRuntime = r.chance(0.92) ? runtime : null
    const server: Planned['server'] = {
      id,
      name,
      sortName: name.toLowerCase(),
      slug,
      description,
      longDescription: r.chance(0.25) ? this.longDescription(name, description, product, language) : null,
      categoryId,
      tags,
      language: serverLanguage,
      runtime: serverRuntime,
      languageKey: serverLanguage === null ? null : caseKey(serverLanguage),
      runtimeKey: serverRuntime === null ? null : caseKey(serverRuntime),
      transportType,
      status,
      featured: r.chance(0.03),
      visibility: 'global',
      ownerTeamId: null,
      repositoryUrl: r.chance(0.92) ? `https://github.com/${ownerHandle}/${repoName}` : null,
      websiteUrl: r.chance(0.3) ? `https://${org.slug}.example.com/${repoName}` : null,
      iconUrl: r.chance(0.2) ? `https://${org.slug}.example.com/assets/${compact(product.name)}.png` : null,
      authorName: owner?.name ?? (r.chance(0.6) ? person(r).name : null),
      organization: owner === null || r.chance(0.3) ? org.name : null,
      license: r.chance(0.9) ? r.pick(LICENSES) : null,
      packages,
      remotes,
      latestVersion: null,
      createdBy: null,
      createdAt: new Date(createdAt),
      updatedAt: new Date(updatedAt),
    }
    const versions = this.withVersions ? this.versions(server, createdAt, updatedAt, packages, packageVersion) : []
    return { server, versions }
  }

  private name(product: Product, role: string, org: Organization): string {
    const r = this.random
    const other = r.pick(PRODUCTS)
    const candidates = [
      () => `${product.name} MCP Server`,
      () => `${product.name} ${role}`,
      () => `${r.pick(QUALIFIERS)} ${product.name} ${role}`,
      () => `${org.name} ${product.name} ${role}`,
      () => `${product.name} ${r.pick(QUALIFIERS)} ${role}`,
      () => `mcp-server-${compact(product.name)}`,
      () => `${compact(product.name)}-mcp${r.chance(0.5) ? `-${compact(role)}` : ''}`,
      () => (other === product ? `${product.name} ${role}` : `${product.name} + ${other.name} ${role}`),
    ]
    const weights = [4, 22, 24, 12, 14, 4, 8, 12]
    const chosen = candidates[r.weighted([0, 1, 2, 3, 4, 5, 6, 7], (i) => weights[i]!, 100)]!()
    for (const name of [chosen, `${chosen} (${org.name})`, `${r.pick(QUALIFIERS)} ${chosen} (${org.name})`]) {
      if (this.claimName(name)) return name
    }
    for (let n = this.nextNumber.get(chosen) ?? 2; ; n++) {
      const name = `${chosen} ${n}`
      if (this.claimName(name)) {
        this.nextNumber.set(chosen, n + 1)
        return name
      }
    }
  }

  private claimName(name: string): boolean {
    const key = name.toLowerCase()
    if (this.names.has(key)) return false
    this.names.add(key)
    return true
  }

  /** Like the service: the name slugified, then `-2`, `-3`, … until free; reserved paths skipped. */
  private slug(name: string): string {
    const base = derivedSlugBase(name)
    for (let n = this.nextSuffix.get(base) ?? 1; ; n++) {
      const slug = n === 1 ? base : `${base}-${n}`
      if (unusableSlug(slug) || this.slugs.has(slug)) continue
      this.slugs.add(slug)
      this.nextSuffix.set(base, n + 1)
      return slug
    }
  }

  /** 1–6 tags: some of the product's (its own name more often than the shared ones), a few general ones. */
  private tags(product: Product, language: string): string[] {
    const r = this.random
    const count = r.weighted([1, 2, 3, 4, 5, 6], (n) => [12, 24, 28, 20, 10, 6][n - 1]!, 100)
    const own = r.sample(product.tags, Math.min(product.tags.length, r.between(1, Math.min(count, 3))))
    const extra = r.sample(GENERAL_TAGS, count - own.length)
    if (r.chance(0.05)) extra.push(language === 'C#' ? 'dotnet' : language.toLowerCase())
    return [...new Set([...own, ...extra])].slice(0, 6)
  }

  private description(product: Product, language: string): string {
    const r = this.random
    const objects = OBJECTS[product.category] ?? ['data']
    const obj = () => r.pick(objects)
    const action = () => r.pick(ACTIONS)
    const feature = () => r.pick(FEATURES)
    const intro = r.pick([
      () => `${capitalize(action())} ${obj()} in ${product.name} from any MCP client.`,
      () => `An MCP server that lets ${r.pick(AGENTS)} ${action()} ${product.name} ${obj()}.`,
      () => `Connects ${r.pick(AGENTS)} to ${product.name}: ${action()} ${obj()} and ${action()} ${obj()}.`,
      () => `Gives ${r.pick(AGENTS)} ${r.pick(ACCESS)} access to ${product.name} ${obj()}.`,
      () => `${capitalize(action())} and ${action()} ${product.name} ${obj()} through the Model Context Protocol.`,
      () => `Lightweight ${product.name} integration to ${action()} ${obj()}, with ${feature()}.`,
    ])()
    const sentences = [intro]
    if (r.chance(0.7)) {
      sentences.push(r.pick([
        () => `Supports ${feature()} and ${feature()}.`,
        () => `Built with ${r.pick(FRAMEWORKS[language] ?? ['the MCP SDK'])}, with ${feature()}.`,
        () => `Includes ${feature()} out of the box.`,
        () => `Designed for ${r.pick(AUDIENCES)} who ${action()} ${obj()} every day.`,
        () => `Tools to ${action()}, ${action()} and ${action()} ${obj()}.`,
      ])())
    }
    if (r.chance(0.35)) {
      const other = r.pick(PRODUCTS)
      sentences.push(r.pick([
        () => `Works well alongside ${other.name}.`,
        () => `Configured through environment variables; ${r.chance(0.5) ? 'runs locally or in a container' : 'no extra services needed'}.`,
        () => `Popular with ${r.pick(AUDIENCES)}.`,
        () => `Can also ${action()} ${other.name} ${r.pick(OBJECTS[other.category] ?? ['data'])}.`,
      ])())
    }
    return sentences.join(' ')
  }

  private longDescription(name: string, description: string, product: Product, language: string): string {
    const r = this.random
    const objects = OBJECTS[product.category] ?? ['data']
    const tools = r.sample(ACTIONS, r.between(2, 5)).map((action) => {
      const object = r.pick(objects)
      return `- \`${compact(action).replace(/-/g, '_')}_${compact(object).replace(/-/g, '_')}\`: ${capitalize(action)} ${object}.`
    })
    return [
      `# ${name}`,
      description,
      '## Tools',
      tools.join('\n'),
      '## Configuration',
      `Set \`${product.env}\` before starting the server. Written in ${language}.`,
    ].join('\n\n')
  }

  private packages(product: Product, language: string, runtime: string, org: Organization, repoName: string, version: string): ServerPackage[] {
    const r = this.random
    if (r.chance(0.08)) return []
    const base = compact(product.name)
    const withVersion = r.chance(0.6) ? { version } : {}
    const env = r.chance(0.55) ? { environment_variables: this.environment(product) } : {}
    // Runner options only from the harmless ones an entry may give (formats/runtime-rules.ts); images take none.
    const option = r.chance(0.15) ? r.pick([0, 1, 2, 3]) : null
    const argsOf = (type: 'npm' | 'pypi') => (option === null ? {} : { runtime_args: (type === 'npm' ? [['-y'], ['--yes'], ['--quiet'], ['-q']] : [['--quiet'], ['-q'], ['--no-progress'], ['--python', '3.12']])[option]! })
    const image = () => `${r.pick(['ghcr.io/', 'docker.io/', ''])}${org.slug}/${repoName}${r.chance(0.5) ? `:${version}` : ''}`
    let main: ServerPackage
    if (language === 'TypeScript' && runtime !== 'docker') {
      const identifier = r.pick([`@${org.slug}/${base}-mcp`, `${base}-mcp-server`, `mcp-${base}`, `@${org.slug}/mcp-${base}`, repoName])
      main = { registry_type: 'npm', identifier, ...withVersion, ...argsOf('npm'), ...env }
    } else if (language === 'Python' && runtime !== 'docker') {
      const identifier = r.pick([`mcp-server-${base}`, `${base}-mcp`, `${org.slug}-${base}-mcp`, `${base.replace(/-/g, '_')}_mcp`])
      main = { registry_type: 'pypi', identifier, ...withVersion, ...argsOf('pypi'), ...env }
    } else {
      main = { registry_type: r.chance(0.7) ? 'docker' : 'oci', identifier: image(), ...env }
    }
    const packages = [main]
    if (main.registry_type !== 'docker' && main.registry_type !== 'oci' && r.chance(0.2)) {
      packages.push({ registry_type: 'docker', identifier: image(), ...env })
    }
    return normalizePackages(packages)
  }

  private environment(product: Product): NonNullable<ServerPackage['environment_variables']> {
    const r = this.random
    const secret = /TOKEN|KEY|SECRET|PASSWORD|CREDENTIALS|URL|URI|DSN|CONNECTION/.test(product.env)
    const variables: NonNullable<ServerPackage['environment_variables']> = [
      { name: product.env, description: `${product.name} ${secret ? 'credentials or connection string' : 'setting'}`, required: true, secret },
    ]
    if (r.chance(0.3)) variables.push({ name: 'LOG_LEVEL', description: 'debug, info, warn or error', required: false, secret: false, default: 'info' })
    if (r.chance(0.15)) variables.push({ name: 'MCP_READ_ONLY', description: 'Refuse write operations', required: false, secret: false, default: 'true' })
    return variables
  }

  /** 0–3 ascending versions between the server's creation and its last update; the latest marked. */
  private versions(server: Planned['server'], createdAt: number, updatedAt: number, packages: ServerPackage[], current: string): VersionInsert[] {
    const r = this.random
    const count = r.weighted([0, 1, 2, 3], (n) => [35, 30, 20, 15][n]!, 100)
    if (count === 0) return []
    let [major, minor, patch] = current.split('.').map(Number) as [number, number, number]
    const texts: string[] = []
    for (let i = 0; i < count; i++) {
      if (i > 0) {
        const bump = r.next()
        if (bump < 0.6) patch++
        else if (bump < 0.9) (minor++, (patch = 0))
        else (major++, (minor = 0), (patch = 0))
      }
      const core = `${major}.${minor}.${patch}`
      // A pre-release sometimes comes before its release, and sometimes is the newest version.
      if (r.chance(0.15)) texts.push(`${core}-${r.pick(['alpha', 'beta', 'rc'])}.${r.between(1, 4)}`)
      if (i < count - 1 || r.chance(0.85)) texts.push(r.chance(0.03) ? `${core}+build.${r.between(1, 999)}` : core)
    }
    const span = updatedAt - createdAt
    const rows: VersionInsert[] = texts.slice(-3).map((version, i, all) => {
      const parsed = parseVersion(version)!
      const at = new Date(createdAt + Math.floor((span * (i + r.next())) / all.length))
      const status = r.weighted(['active', 'deprecated', 'yanked'] as const, (s) => (s === 'active' ? 85 : s === 'deprecated' ? 10 : 5), 100)
      return {
        id: this.id(at.getTime()),
        serverId: server.id,
        version,
        precedence: parsed.key,
        prerelease: parsed.prerelease,
        status,
        changelog: r.chance(0.6) ? `${r.pick(['Adds', 'Improves', 'Fixes'])} ${r.pick(FEATURES)}.` : null,
        releaseDate: r.chance(0.9) ? at : null,
        // An image tag has no `+`: build metadata becomes `_` there (the catalogue refuses what its registry would).
        packages: r.chance(0.3) && packages.length > 0 ? packages.map((p) => ({ ...p, version: p.registry_type === 'docker' || p.registry_type === 'oci' ? version.replace(/\+/g, '_') : version })) : null,
        remotes: null,
        isLatest: false,
        createdAt: at,
        updatedAt: at,
      }
    })
    // The latest: the highest active release, else the highest active pre-release (binary key order).
    let latest: VersionInsert | undefined
    for (const row of rows) {
      if (row.status !== 'active') continue
      if (latest === undefined || (latest.prerelease && !row.prerelease) || (latest.prerelease === row.prerelease && row.precedence > latest.precedence)) latest = row
    }
    if (latest !== undefined) {
      latest.isLatest = true
      server.latestVersion = latest.version
    }
    return rows
  }
}

