/**
 * The satellite as a whole: it pairs with the backend (or resumes a saved pairing), sends a
 * heartbeat every 30 seconds, long-polls its desired state and keeps its instances in line with
 * every document it receives, reports back, and serves the instances to MCP clients.
 */
import { cpus, freemem, totalmem, type, arch } from 'node:os'
import { Backend, BackendError, type HeartbeatBody, type IsolationReport } from './backend.js'
import { CallLog } from './calls.js'
import type { SatelliteConfig } from './config.js'
import { UNRESTRICTED, type EgressRule } from './egress.js'
import { Front } from './front.js'
import { ManagedInstance } from './instance.js'
import { KeyRing } from './key-ring.js'
import { rotateKeys, unfinished } from './key-rotation.js'
import { defaultIsolationSettings, Isolation } from './isolation.js'
import type { Logger } from './logger.js'
import { Reports } from './reports.js'
import { SatelliteKeys } from './sealing.js'
import { StateStore, type Pairing } from './state.js'
import { TokenChecker } from './tokens.js'
import { policyKey } from './tool-policy.js'
import type { DesiredState, Instance } from './types.js'
import { SATELLITE_VERSION } from './upstream.js'

const LONG_POLL_SECONDS = 30
const HEARTBEAT_SECONDS = 30
const MAX_BACKOFF_MS = 60_000
const DISABLED_RETRY_MS = 60_000
/** A clean stop tells the backend, but does not wait on it longer than this. */
const OFFLINE_TIMEOUT_MS = 2_000

/** The satellite cannot go on: its pairing was refused and no registration token can replace it. */
export class FatalError extends Error {}

export class Satellite {
  readonly backend: Backend
  readonly front: Front
  private readonly store: StateStore
  private readonly reports: Reports
  private readonly calls: CallLog
  private readonly instances = new Map<string, ManagedInstance>()
  private readonly ring = new KeyRing()
  private pairing: Pairing | undefined
  private revision: string | undefined
  private etag: string | undefined
  private heartbeatTimer: NodeJS.Timeout | undefined
  private heartbeatSeconds = HEARTBEAT_SECONDS
  private readonly stopping = new AbortController()
  private polling: Promise<void> | undefined
  private cpuMark = { usage: process.cpuUsage(), at: process.hrtime.bigint() }
  private satelliteUrl: string | undefined
  /** Resolves once stopped: with the reason when the satellite stopped on its own (pairing refused). */
  readonly ended: Promise<Error | undefined>
  private endWith!: (reason: Error | undefined) => void
  private fatal: Error | undefined
  /** Paired and serving: from here on a 401 to the key means the pairing is gone. */
  private running = false
  private isolation: Isolation | undefined
  /** False once the backend refused `isolation` and `runtimes` as unknown fields. */
  private backendTakesIsolation = true

  constructor(private readonly config: SatelliteConfig, private readonly log: Logger) {
    this.backend = new Backend(config.backendUrl, (what) => void this.unpaired(what))
    this.store = new StateStore(config.stateDir)
    this.reports = new Reports(this.backend, log, () => this.observed())
    this.calls = new CallLog(this.backend, log)
    const tokens = new TokenChecker((token) => this.backend.introspect(token))
    this.front = new Front({
      backendUrl: config.backendUrl, tokens, log, instancesOf: (id) => this.instancesOf(id),
      calls: (instance, call) => this.calls.record(instance.id, call),
      ...(config.sessions === undefined ? {} : { sessions: config.sessions }),
    })
    this.ended = new Promise((resolve) => (this.endWith = resolve))
  }

  get id(): string | undefined {
    return this.pairing?.satellite_id
  }

  get url(): string {
    if (this.satelliteUrl === undefined) throw new Error('not listening yet')
    return this.satelliteUrl
  }

  /** Listens, pairs, then runs until stop(). Throws FatalError when it cannot pair. */
  async start(): Promise<void> {
    const isolation = await Isolation.start(this.config.isolation ?? { ...defaultIsolationSettings(), hidden: this.config.stateDir === undefined ? [] : [this.config.stateDir] })
    this.isolation = isolation
    // Said once here; each instance it refuses carries the same reason in its status.
    if (isolation.problem !== undefined) this.log.error(`${isolation.problem}; every instance placed here fails until then`)
    else if (isolation.enforced === 'none') this.log.warn('ISOLATION=none: instances run bare, as this satellite\'s user, and see each other and the satellite')
    else this.log.info(`instances run in a process sandbox (bubblewrap); runtimes: ${isolation.runtimes.join(', ')}`)
    const port = await this.front.listen(this.config.host, this.config.port)
    this.satelliteUrl = this.config.satelliteUrl ?? `http://127.0.0.1:${port}`
    this.front.setBaseUrl(this.satelliteUrl)
    this.log.info(`listening on ${this.config.host}:${port}; MCP endpoints under ${this.satelliteUrl}/mcp/<installation id>`)
    try {
      await this.pair()
    } catch (error) {
      await this.front.close()
      await isolation.close()
      throw error
    }
    this.running = true
    await this.keyChanges()
    this.scheduleHeartbeat(0)
    this.polling = this.pollLoop()
  }

  /** Stops polling, stops every instance (SIGTERM, then SIGKILL), reports and closes. */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return
    this.stopping.abort()
    clearTimeout(this.heartbeatTimer)
    await this.polling
    await this.stopAll('the satellite is shutting down')
    await this.isolation?.close()
    await Promise.all([this.reports.flush(5000), this.calls.flush(5000)])
    this.reports.close()
    this.calls.close()
    await this.saidOffline()
    await this.front.close()
    this.endWith(this.fatal)
  }

  // ---- Pairing ----

  private async pair(): Promise<void> {
    const saved = await this.store.load()
    if (saved !== undefined && saved.backend_url === this.config.backendUrl) {
      if (saved.name !== this.config.name) this.log.warn(`STATE_DIR holds the pairing of "${saved.name}"; going on as "${saved.name}"`)
      this.ring.use(await SatelliteKeys.restore(saved.private_key, saved.public_key))
      this.backend.use(saved.satellite_id, saved.api_key)
      this.pairing = saved
      try {
        await this.heartbeat()
        this.log.info(`resumed the pairing of satellite ${saved.satellite_id} (${saved.name})`)
        if (saved.satellite_url !== this.url) await this.moved(saved.satellite_url)
        return
      } catch (error) {
        if (!(error instanceof BackendError && error.unpaired)) {
          // The backend may just be down: keep the pairing, the loops retry.
          this.log.warn(`the backend did not answer the first heartbeat: ${error instanceof Error ? error.message : String(error)}`)
          return
        }
        if (this.config.registrationToken === undefined) {
          throw new FatalError('the saved pairing was refused (the satellite was deleted or registered again elsewhere): set REGISTRATION_TOKEN to a new token')
        }
        this.log.warn('the saved pairing was refused; registering again with REGISTRATION_TOKEN')
        await this.store.forget()
      }
    } else if (saved !== undefined) {
      this.log.warn(`STATE_DIR holds a pairing with ${saved.backend_url}, not ${this.config.backendUrl}: registering anew`)
    }
    // Until the backend answers: a satellite started before its backend waits for it.
    for (let attempt = 1; ; attempt += 1) {
      try {
        await this.register()
        return
      } catch (error) {
        if (error instanceof FatalError || this.stopping.signal.aborted) throw error
        const wait = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (attempt - 1))
        this.log.warn(`registration failed (${error instanceof Error ? error.message : String(error)}); next attempt in ${Math.round(wait / 1000)} s`)
        await this.pause(wait)
        if (this.stopping.signal.aborted) throw new FatalError('stopped before pairing')
      }
    }
  }

  /**
   * The backend keeps the URL given at registration (it tells clients where to connect); only a
   * new registration changes it. With a registration token at hand, register again: the same
   * name keeps the same id.
   */
  private async moved(previous: string | undefined): Promise<void> {
    if (this.config.registrationToken === undefined) {
      this.log.warn(`this satellite now serves at ${this.url} but registered ${previous ?? 'another URL'}; register again with a new REGISTRATION_TOKEN to update it`)
      return
    }
    try {
      await this.register()
    } catch (error) {
      this.log.warn(`could not register the new URL ${this.url}: ${error instanceof Error ? error.message : String(error)}; going on with the saved pairing`)
    }
  }

  private async register(): Promise<void> {
    const token = this.config.registrationToken
    if (token === undefined) throw new FatalError('REGISTRATION_TOKEN is required to pair this satellite (STATE_DIR holds no pairing)')
    const keys = await SatelliteKeys.generate()
    let registered
    try {
      registered = await this.withIsolationReport((report) => this.backend.register(token, {
        name: this.config.name,
        capabilities: ['npm', 'pypi', 'oci', 'stdio', 'remote-streamable-http', 'remote-sse'],
        satellite_url: this.url,
        public_key: keys.publicKey,
        system_info: { os: type().toLowerCase(), arch: arch(), node_version: process.version, memory_mb: Math.round(totalmem() / 1024 / 1024) },
        ...report,
      }))
    } catch (error) {
      if (error instanceof BackendError && error.status < 500) throw new FatalError(`registration was refused: ${error.message}`)
      throw error
    }
    this.ring.use(keys)
    this.pairing = {
      backend_url: this.config.backendUrl,
      name: registered.satellite.name,
      satellite_id: registered.satellite.id,
      api_key: registered.api_key,
      private_key: keys.privateKeyText,
      public_key: keys.publicKey,
      satellite_url: this.url,
      satellite_type: registered.satellite.satellite_type,
    }
    this.backend.use(registered.satellite.id, registered.api_key)
    await this.store.save(this.pairing)
    this.log.info(`registered as satellite ${registered.satellite.id} (${registered.satellite.name}, ${registered.satellite.satellite_type})`)
  }

  // ---- Keys and stops ----

  /**
   * Replaces the key pair the backend seals secrets to, proving the current one. Instances keep
   * running: the next document carries their secrets sealed to the new key, and the old key still
   * opens what was sealed before.
   */
  async rotateKey(): Promise<void> {
    if (this.pairing === undefined) throw new Error('not paired')
    const { pairing, fingerprint } = await rotateKeys({ backend: this.backend, ring: this.ring, store: this.store, pairing: this.pairing })
    this.pairing = pairing
    this.log.info(`key pair replaced; the backend now seals to ${fingerprint}`)
  }

  /** At start: finish a key change a stop interrupted, then the one ROTATE_KEY asks for. A failure is logged, not fatal. */
  private async keyChanges(): Promise<void> {
    try {
      const pending = this.pairing === undefined ? undefined : await unfinished(this.pairing)
      if (pending !== undefined) {
        this.ring.expect(pending)
        const { pairing } = await rotateKeys({ backend: this.backend, ring: this.ring, store: this.store, pairing: this.pairing! }, pending)
        this.pairing = pairing
        this.log.info('finished the key change an earlier run began')
      }
      if (this.config.rotateKey === true) await this.rotateKey()
    } catch (error) {
      this.log.warn(`the key change failed (${error instanceof Error ? error.message : String(error)}); going on with the current key`)
    }
  }

  /** A clean stop only (never after the pairing was refused): best effort, briefly. */
  private async saidOffline(): Promise<void> {
    if (!this.running || this.fatal !== undefined) return
    try {
      await this.backend.offline(OFFLINE_TIMEOUT_MS)
    } catch (error) {
      this.log.warn(`could not tell the backend this satellite stopped: ${error instanceof Error ? error.message : String(error)}`)
    }
  }

  // ---- Heartbeat ----

  private scheduleHeartbeat(delayMs: number): void {
    if (this.stopping.signal.aborted) return
    this.heartbeatTimer = setTimeout(() => {
      this.heartbeat()
        .catch((error: unknown) => this.backendTrouble('heartbeat', error))
        .finally(() => this.scheduleHeartbeat(this.heartbeatSeconds * 1000))
    }, delayMs)
  }

  private async heartbeat(): Promise<void> {
    const metrics = this.metrics()
    const answer = await this.withIsolationReport((report) => this.backend.heartbeat({ ...metrics, ...report }))
    if (typeof answer.heartbeat_interval_seconds === 'number' && answer.heartbeat_interval_seconds >= 5) this.heartbeatSeconds = answer.heartbeat_interval_seconds
    // A pairing saved before the type was kept counts as shared until the backend says whom it serves.
    const type = answer.satellite?.satellite_type
    if (this.pairing !== undefined && this.pairing.satellite_type === undefined && (type === 'team' || type === 'global')) {
      this.pairing = { ...this.pairing, satellite_type: type }
      await this.store.save(this.pairing)
    }
  }

  private metrics(): HeartbeatBody {
    const now = process.hrtime.bigint()
    const usage = process.cpuUsage(this.cpuMark.usage)
    const elapsedMicros = Number(now - this.cpuMark.at) / 1000
    this.cpuMark = { usage: process.cpuUsage(), at: now }
    const cpu = elapsedMicros > 0 ? ((usage.user + usage.system) / elapsedMicros / cpus().length) * 100 : 0
    const failing = [...this.instances.values()].some((instance) => instance.spec.desired === 'running' && instance.phase === 'failed')
    return {
      status: failing ? 'degraded' : 'active',
      system_metrics: {
        cpu_usage_percent: Math.min(100, Math.round(cpu * 10) / 10),
        memory_usage_mb: Math.round((totalmem() - freemem()) / 1024 / 1024),
        uptime_seconds: Math.round(process.uptime()),
      },
      version: SATELLITE_VERSION,
    }
  }

  /**
   * Sends `isolation` and `runtimes` with a registration or heartbeat. A backend from before these
   * fields refuses unknown ones (400 VALIDATION_ERROR naming them): the request is sent again
   * without them, and so are all later ones.
   */
  private async withIsolationReport<T>(send: (report: IsolationReport) => Promise<T>): Promise<T> {
    if (!this.backendTakesIsolation || this.isolation === undefined) return send({})
    try {
      return await send({ isolation: this.isolation.enforced, runtimes: this.isolation.runtimes })
    } catch (error) {
      const refused = error instanceof BackendError && error.status === 400 && error.code === 'VALIDATION_ERROR' &&
        error.fields.some((field) => field === 'isolation' || field === 'runtimes')
      if (!refused) throw error
      this.backendTakesIsolation = false
      this.log.warn('the backend does not know the isolation and runtimes fields yet; sending without them')
      return send({})
    }
  }

  // ---- Desired state ----

  private async pollLoop(): Promise<void> {
    let failures = 0
    while (!this.stopping.signal.aborted) {
      const asked = Date.now()
      try {
        const answer = await this.backend.desiredState(this.etag, LONG_POLL_SECONDS, this.stopping.signal)
        failures = 0
        if (answer.changed) {
          this.etag = answer.etag
          this.apply(answer.document)
        } else if (Date.now() - asked < 1000) {
          // A backend that does not hold the request: poll at its pace instead of spinning.
          await this.pause(5000)
        }
      } catch (error) {
        if (this.stopping.signal.aborted) return
        failures += 1
        const wait = await this.backendTrouble('desired-state', error)
        await this.pause(wait ?? Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures - 1)) * (0.75 + Math.random() / 2))
      }
    }
  }

  /** Level-triggered: the document is everything that should exist here. */
  apply(document: DesiredState): void {
    this.revision = document.revision
    const seen = new Set<string>()
    for (const spec of document.instances) {
      seen.add(spec.instance_id)
      const known = this.instances.get(spec.instance_id)
      if (known === undefined) {
        const instance = this.create(spec)
        this.instances.set(spec.instance_id, instance)
        instance.update(spec)
      } else {
        const toolsChanged = policyKey(known.spec) !== policyKey(spec)
        known.update(spec)
        if (toolsChanged) this.front.toolsChanged(known)
      }
    }
    for (const [id, instance] of this.instances) {
      if (seen.has(id)) continue
      this.instances.delete(id)
      void instance.remove()
    }
    this.log.info(`desired state ${document.revision}: ${document.instances.length} instance(s)`)
    this.reports.observedChanged()
  }

  private create(spec: Instance): ManagedInstance {
    if (this.ring.current === undefined) throw new Error('not paired')
    return new ManagedInstance(spec, {
      keys: this.ring,
      ...(this.isolation === undefined ? {} : { isolation: this.isolation }),
      packageDirs: this.config.packageDirs,
      startTimeoutMs: this.config.startTimeoutMs,
      egress: this.egress(),
      hooks: {
        phase: (instance) => {
          this.log.info(`instance ${instance.id} (${instance.spec.name}): ${instance.phase}${instance.message === undefined ? '' : ` — ${instance.message}`}`)
          this.reports.observedChanged()
        },
        log: (instanceId, stream, text) => this.reports.line(instanceId, stream, text),
        tools: (instanceId, tools) => this.reports.tools(instanceId, tools),
      },
    })
  }

  /**
   * What remote targets may reach: anything on a team's own satellite (its operator is the team);
   * public addresses only, or the operator's EGRESS_ALLOWED_HOSTS, on one that serves several teams —
   * and on one whose saved pairing predates the type being kept, which may be either.
   */
  private egress(): EgressRule {
    if (this.pairing?.satellite_type === 'team') return UNRESTRICTED
    return { restricted: true, allowedHosts: this.config.egressAllowedHosts ?? [] }
  }

  private observed() {
    if (this.revision === undefined) return undefined
    return { revision: this.revision, instances: [...this.instances.values()].map((instance) => instance.observed()) }
  }

  /** The instances placed here for an installation: the shared one, or one per user. */
  instancesOf(installationId: string): ManagedInstance[] {
    return [...this.instances.values()].filter((instance) => instance.spec.installation_id === installationId)
  }

  private async stopAll(reason: string): Promise<void> {
    if (this.instances.size > 0) this.log.info(`stopping ${this.instances.size} instance(s): ${reason}`)
    const all = [...this.instances.values()]
    await Promise.all(all.map((instance) => instance.remove()))
  }

  /**
   * What a refused request means for the satellite as a whole. 401: the pairing is gone, so
   * nothing may run and the satellite ends. 403 SATELLITE_DISABLED: the backend places the
   * instances elsewhere, so they stop here, and polling slows down. Returns the wait before the
   * next attempt when it differs from the usual backoff.
   */
  private async backendTrouble(what: string, error: unknown): Promise<number | undefined> {
    const message = error instanceof Error ? error.message : String(error)
    if (error instanceof BackendError && error.unpaired) {
      await this.unpaired(what)
      return undefined
    }
    if (error instanceof BackendError && error.disabled) {
      this.log.warn(`${what}: an admin disabled this satellite; its instances stop until it is enabled again`)
      this.etag = undefined
      this.revision = undefined
      await this.stopAll('the satellite is disabled')
      this.instances.clear()
      return DISABLED_RETRY_MS
    }
    this.log.warn(`${what} failed: ${message}`)
    return undefined
  }

  /**
   * The backend answered 401 to the satellite's key, on any route: the satellite was deleted, or
   * registered again elsewhere. Nothing may run on a pairing that is gone, so everything stops
   * and the saved pairing is forgotten. Any request may be the first to hear it (a client's
   * token being introspected, a report), not only the next poll or heartbeat.
   */
  private async unpaired(what: string): Promise<void> {
    if (!this.running || this.fatal !== undefined) return
    this.log.error(`${what}: the backend no longer knows this satellite's key; stopping. Pair again with a new REGISTRATION_TOKEN.`)
    this.fatal = new FatalError('the pairing was refused')
    await this.store.forget()
    void this.stop()
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopping.signal.aborted) return resolve()
      const timer = setTimeout(resolve, ms)
      this.stopping.signal.addEventListener('abort', () => {
        clearTimeout(timer)
        resolve()
      }, { once: true })
    })
  }
}
