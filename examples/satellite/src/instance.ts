/**
 * One instance the backend placed on this satellite, kept in line with what the backend wants:
 * started when it should run, stopped when it should not, restarted when its spec (spec_hash)
 * or its restart generation changes, and started again with a growing delay after a crash.
 * A rotating secret (`rotating: true`, left out of spec_hash: an OAuth access token the backend
 * refreshed) is swapped in place: a remote server's headers change from the next request on, and
 * nothing restarts.
 *
 * Changes arrive at any time (each desired-state document); the work they cause runs one step
 * at a time per instance, and each step re-reads the latest spec, so a burst of documents ends
 * in the state of the last one. A start that a newer document makes pointless is abandoned.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { Tool } from '@modelcontextprotocol/sdk/types.js'
import type { EgressRule } from './egress.js'
import { Isolation } from './isolation.js'
import { LaunchError, packageCommand, remoteTarget, type Secrets } from './launch.js'
import type { SecretOpener } from './key-ring.js'
import { LiveHeaders } from './live-headers.js'
import { mask, maskedForms } from './masking.js'
import { OPEN_POLICY, policyOf, type ToolPolicy } from './tool-policy.js'
import type { Instance, ObservedInstance, Phase } from './types.js'
import { openTransport, Upstream, type TransportWatch } from './upstream.js'

export interface InstanceHooks {
  /** The phase (or its message) changed. */
  phase(instance: ManagedInstance): void
  /** A log line for the backend; secret values are already masked. */
  log(instanceId: string, stream: 'stdout' | 'stderr' | 'event', text: string): void
  /** The full tool list, on start and on every change. */
  tools(instanceId: string, tools: Tool[]): void
}

export interface InstanceOptions {
  keys: SecretOpener
  /** How its process is kept apart; without one, a sandbox with the default settings. */
  isolation?: Isolation
  packageDirs: readonly string[]
  startTimeoutMs: number
  hooks: InstanceHooks
  /** What remote targets may reach (egress.ts); absent: public addresses only, the rule of a shared satellite. */
  egress?: EgressRule
}

const SHARED_SATELLITE_EGRESS: EgressRule = { restricted: true, allowedHosts: [] }

/** The first retry after a crash waits this long, doubling up to MAX_RETRY_MS. */
const FIRST_RETRY_MS = 1000
const MAX_RETRY_MS = 60_000
/** A server that ran this long before failing starts its retries from the shortest delay again. */
const STABLE_MS = 60_000
/** The longest status message the backend takes. */
const MAX_MESSAGE = 2000

export class ManagedInstance {
  phase: Phase = 'stopped'
  message: string | undefined
  startedAt: Date | undefined
  upstream: Upstream | undefined

  /** spec_hash/restart_generation the running upstream was started with. */
  private upstreamKey: string | undefined
  private start: { controller: AbortController; key: string } | undefined
  private retry: { timer: NodeJS.Timeout; key: string } | undefined
  private failures = 0
  private removed = false
  private work: Promise<void> = Promise.resolve()
  /** The opened secret values of the current spec and their encoded forms (masking.ts). */
  private secretForms: string[] = []
  /** A running remote server's headers, shared by every connection to it (live-headers.ts). */
  private headers: LiveHeaders | undefined
  /** The sealed rotating secrets the running upstream's headers were last built from. */
  private rotatingApplied = ''

  /** The tool policy of `policyFor` (computed once per spec). */
  private policy: ToolPolicy = OPEN_POLICY
  private policyFor: Instance | undefined

  constructor(public spec: Instance, private readonly options: InstanceOptions) {}

  get id(): string {
    return this.spec.instance_id
  }

  /** Which tools clients may see and call, as the current spec says (read at every request: a new document applies at once). */
  get toolPolicy(): ToolPolicy {
    if (this.policyFor !== this.spec) {
      this.policy = policyOf(this.spec)
      this.policyFor = this.spec
    }
    return this.policy
  }

  /**
   * A new connection to the running server for one client session, not yet started: for a
   * package a process of its own (in the instance's sandbox, with the instance's folder as its
   * home), for a remote server a session of its own. Its output goes to the instance's logs,
   * masked like the rest.
   */
  sessionTransport(watch: TransportWatch = {}): Transport | undefined {
    const upstream = this.upstream
    if (upstream === undefined || this.phase !== 'running') return undefined
    return openTransport(upstream.source, (stream, text) => this.options.hooks.log(this.id, stream, this.mask(text)), watch)
  }

  /** Takes the latest spec from the backend and converges to it in the background. */
  update(spec: Instance): void {
    this.spec = spec
    if (this.start !== undefined && (!this.wanted() || this.start.key !== keyOf(spec))) this.start.controller.abort()
    void this.schedule()
  }

  /** The instance left the document: stops it and removes its private folder; resolves once done. */
  remove(): Promise<void> {
    this.removed = true
    this.start?.controller.abort()
    return this.schedule().then(async () => {
      await (await this.isolation()).release(this.id).catch((error: unknown) => this.event(`could not remove its folder: ${error instanceof Error ? error.message : String(error)}`))
    })
  }

  /** What observed-state reports for it. */
  observed(): ObservedInstance {
    return {
      instance_id: this.id,
      spec_hash: this.spec.spec_hash,
      phase: this.phase,
      ...(this.message === undefined ? {} : { message: this.message.slice(0, MAX_MESSAGE) }),
      ...(this.startedAt === undefined || this.phase !== 'running' ? {} : { started_at: this.startedAt.toISOString() }),
    }
  }

  /** Resolves when the steps asked so far are done (tests, shutdown). */
  settled(): Promise<void> {
    return this.work
  }

  private wanted(): boolean {
    return !this.removed && this.spec.desired === 'running'
  }

  private schedule(): Promise<void> {
    this.work = this.work.then(() => this.converge()).catch((error: unknown) => {
      this.event(`internal error: ${error instanceof Error ? error.message : String(error)}`)
    })
    return this.work
  }

  private async converge(): Promise<void> {
    for (;;) {
      const spec = this.spec
      const key = keyOf(spec)
      if (this.upstream !== undefined) {
        if (this.wanted() && this.upstreamKey === key) return this.swapRotating(spec)
        await this.halt(this.wanted())
        continue
      }
      if (!this.wanted()) {
        this.clearRetry()
        this.setPhase('stopped', undefined)
        return
      }
      // After a crash, wait for the retry unless the spec changed meanwhile.
      if (this.retry !== undefined && this.retry.key === key) return
      if (this.retry !== undefined) this.failures = 0
      this.clearRetry()
      const outcome = await this.launch(spec)
      if (outcome === 'failed') return
    }
  }

  /** One start of `spec`: 'aborted' when a newer spec or a stop made it pointless. */
  private async launch(spec: Instance): Promise<'started' | 'aborted' | 'failed'> {
    const key = keyOf(spec)
    const controller = new AbortController()
    this.start = { controller, key }
    this.setPhase('starting', undefined)
    let upstream: Upstream | undefined
    try {
      const secrets = await this.options.keys.openAll(spec.instance_id, spec.secrets)
      this.secretForms = maskedForms(withCredentials(secrets.values()))
      this.rotatingApplied = rotatingOf(spec)
      upstream = await this.upstreamFor(spec, secrets)
      await upstream.connect(this.options.startTimeoutMs, controller.signal)
      if (controller.signal.aborted) throw new Error('stopped while starting')
    } catch (error) {
      this.start = undefined
      if (controller.signal.aborted) {
        await upstream?.stop()
        this.event('start abandoned: the instance changed or was stopped meanwhile')
        return 'aborted'
      }
      this.fail(error instanceof Error ? error.message : String(error), undefined)
      return 'failed'
    }
    this.start = undefined
    this.upstream = upstream
    this.upstreamKey = key
    this.startedAt = new Date()
    upstream.onClose(() => {
      if (!upstream.stopping) this.lost(upstream)
    })
    this.setPhase('running', undefined)
    this.event(`running (pid ${upstream.pid ?? 'none: remote'}), ${upstream.tools.length} tools`)
    this.options.hooks.tools(this.id, upstream.tools)
    return 'started'
  }

  private async upstreamFor(spec: Instance, secrets: Secrets): Promise<Upstream> {
    const events = {
      line: (stream: 'stdout' | 'stderr', text: string) => this.options.hooks.log(this.id, stream, this.mask(text)),
      tools: (tools: Tool[]) => this.options.hooks.tools(this.id, tools),
    }
    const launch = spec.launch
    if (launch.kind === 'remote') {
      // The satellite itself reaches a remote server; there is no process to take the network from.
      if (spec.network === 'none') throw new LaunchError('a remote server cannot run with network "none"')
      const target = remoteTarget(launch, secrets)
      this.event(`connecting to ${new URL(target.url).origin} (${target.transport})`)
      this.headers = new LiveHeaders(target.headers)
      return Upstream.remote(target, this.headers, events, this.options.egress ?? SHARED_SATELLITE_EGRESS)
    }
    const isolation = await this.isolation()
    // Refused before anything is read or written for it: no sandbox, no start.
    if (isolation.problem !== undefined) throw new LaunchError(isolation.problem)
    const command = await packageCommand(launch, secrets, { packageDirs: this.options.packageDirs })
    const child = await isolation.child(command, spec.instance_id, spec.network ?? 'full')
    this.event(`starting ${command.description}${isolation.enforced === 'none' ? ', not sandboxed (ISOLATION=none)' : ' in its sandbox'}`)
    return Upstream.process(child, events)
  }

  /**
   * The running upstream's spec is unchanged but its rotating secrets may not be: the headers
   * every connection to the remote server reads are rebuilt from the new values. Only the
   * rotating secrets are compared (their sealed text changes exactly when the backend seals a new
   * value). A value that does not open leaves the headers as they were and says so.
   */
  private async swapRotating(spec: Instance): Promise<void> {
    const rotating = rotatingOf(spec)
    if (rotating === this.rotatingApplied) return
    this.rotatingApplied = rotating
    if (spec.launch.kind !== 'remote' || this.headers === undefined) return
    try {
      const secrets = await this.options.keys.openAll(spec.instance_id, spec.secrets)
      // The values before stay masked: a line about a request sent just before may still hold one.
      this.secretForms = [...new Set([...maskedForms(withCredentials(secrets.values())), ...this.secretForms])].sort((a, b) => b.length - a.length)
      this.headers.replace(remoteTarget(spec.launch, secrets).headers)
      this.event('rotating secrets renewed: the next requests to the server carry the new values')
    } catch (error) {
      this.event(`the renewed rotating secrets could not be applied (${error instanceof Error ? error.message : String(error)}); the previous values stay in use`)
    }
  }

  private isolation(): Promise<Isolation> {
    return this.options.isolation === undefined ? Isolation.default() : Promise.resolve(this.options.isolation)
  }

  /** The running upstream ended; unasked, that is a crash. */
  private lost(upstream: Upstream): void {
    if (this.upstream !== upstream) return
    this.upstream = undefined
    this.upstreamKey = undefined
    this.fail(upstream.endReason() ?? 'the connection to the server closed', this.startedAt)
  }

  /** Stops the running upstream; `restarting` keeps the phase at starting for what follows. */
  private async halt(restarting: boolean): Promise<void> {
    const upstream = this.upstream
    if (upstream === undefined) return
    this.upstream = undefined
    this.upstreamKey = undefined
    this.setPhase(restarting ? 'starting' : 'stopped', undefined)
    this.event(restarting ? 'restarting: the configuration changed or a restart was asked' : 'stopping')
    await upstream.stop()
    const exit = upstream.exit
    if (exit !== undefined) this.event(exit.signal !== null ? `stopped (${exit.signal})` : `stopped (exit code ${exit.code})`)
  }

  private fail(reason: string, startedAt: Date | undefined): void {
    const message = this.mask(reason)
    if (startedAt !== undefined && Date.now() - startedAt.getTime() >= STABLE_MS) this.failures = 0
    this.failures += 1
    const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.failures - 1))
    this.setPhase('failed', message)
    this.event(`failed: ${message}; next attempt in ${Math.round(delay / 1000)} s`)
    this.clearRetry()
    const key = keyOf(this.spec)
    const timer = setTimeout(() => {
      if (this.retry?.timer === timer) this.retry = undefined
      void this.schedule()
    }, delay)
    this.retry = { timer, key }
  }

  private clearRetry(): void {
    if (this.retry !== undefined) clearTimeout(this.retry.timer)
    this.retry = undefined
  }

  private setPhase(phase: Phase, message: string | undefined): void {
    if (this.phase === phase && this.message === message) return
    this.phase = phase
    this.message = message
    this.options.hooks.phase(this)
  }

  private event(text: string): void {
    this.options.hooks.log(this.id, 'event', this.mask(text))
  }

  /** The text with every secret value of the instance, and its encoded forms, replaced. */
  private mask(text: string): string {
    return mask(text, this.secretForms)
  }
}

function keyOf(spec: Instance): string {
  return `${spec.spec_hash}/${spec.restart_generation}`
}

/** The values, and the credential alone of an Authorization-style one (`Bearer <token>`): a program may print either. */
function withCredentials(values: Iterable<string>): string[] {
  return [...values].flatMap((value) => {
    const credential = /^(?:Bearer|Basic)\s+(\S.*)$/i.exec(value)?.[1]
    return credential === undefined ? [value] : [value, credential]
  })
}

/** The rotating secrets of a spec as they were sealed: what tells a renewed value. */
function rotatingOf(spec: Instance): string {
  return JSON.stringify(spec.secrets.filter((secret) => secret.rotating === true).map((secret) => [secret.target, secret.sealed]))
}
