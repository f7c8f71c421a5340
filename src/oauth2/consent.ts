import { createHmac } from 'node:crypto'
import type { Scope } from '../auth/policies.js'
import type { SessionCaller } from '../auth/sessions.js'
import { newId } from '../db/ids.js'
import type { OAuthGrantRow, OAuthRequestRow } from '../db/repositories/oauth.js'
import type { UserRow } from '../db/repositories/users.js'
import { AppError, errors } from '../http/errors.js'
import { randomToken, sameSecret } from '../lib/tokens.js'
import { findClient } from './client-lookup.js'
import type { OAuthClient } from './clients.js'
import { clientRedirect, issuerOf, loginEnabled, nowOf, type OAuthDeps } from './deps.js'
import { anotherSession, consentDisabled } from './errors.js'
import { audienceOf, backendResources } from './resources.js'
import { describeScopes, isSubset, parseScope, type ScopeContext } from './scopes.js'
import { TeamChooser, type TeamChoice, type TeamOption } from './team-choice.js'

/** The code lives 10 minutes and is single use. */
export const CODE_LIFETIME_MS = 10 * 60 * 1000

export interface ConsentDecision {
  request_id: string
  decision: 'approve' | 'deny'
  team_id?: string
  csrf_token: string
}

export interface ConsentView {
  request: OAuthRequestRow
  client: OAuthClient
  /** The scopes asked for, each in the words of what it will let the client do. */
  scopes: Array<{ name: Scope; description: string }>
  user: UserRow | null
  /** The user's teams, the one chosen for them `selected` (none before sign-in). */
  teams: TeamOption[]
  /** The satellite the request's resource identifies, when the user may know it. */
  satellite: { name: string } | null
  csrfToken: string | null
}

/**
 * The consent step between the authorization request and the code: the page's details, the
 * decision, remembered approvals. A request belongs to the first signed-in session that sees it,
 * and only that session may decide, with a CSRF token bound to both.
 */
export class Consent {
  private readonly issuer: string
  private readonly backend: ReadonlySet<string>
  private readonly chooser: TeamChooser

  constructor(private readonly deps: OAuthDeps) {
    this.issuer = issuerOf(deps.config)
    this.backend = backendResources(this.issuer)
    this.chooser = new TeamChooser(deps)
  }

  /** The pending request and what the consent page shows; binds the request to the session. */
  async view(requestId: string, session: SessionCaller | null): Promise<ConsentView> {
    const { repository } = this.deps
    const request = await repository.findRequest(requestId, nowOf(this.deps))
    const client = request === undefined ? null : await findClient(this.deps, request.clientId)
    if (request === undefined || client === null) throw errors.notFound('Authorization request')
    if (!(await loginEnabled(this.deps))) throw consentDisabled()
    const scopes = parseScope(request.scope) ?? []
    // prompt=login: a session older than the request must sign in again (the consent page's form or the provider).
    if (session === null || (request.prompt === 'login' && session.signedInAt.getTime() < request.createdAt.getTime())) {
      // Nothing about teams or satellites before sign-in: who asks is not known yet.
      return { request, client, scopes: describeScopes(scopes), user: null, teams: [], satellite: null, csrfToken: null }
    }
    if (!(await repository.bindRequest(request.id, session.credentialId, nowOf(this.deps)))) throw anotherSession()
    const choice = await this.chooser.choose(session.userId, request.clientId, request.resource)
    return {
      request: { ...request, sessionId: session.credentialId },
      client,
      scopes: describeScopes(scopes, this.scopeContext(request, choice)),
      user: session.user,
      teams: choice.teams,
      satellite: choice.satellite,
      csrfToken: this.csrfToken(request.id, session.credentialId),
    }
  }

  /** What the scope descriptions say the token will reach: the chosen team, and where. */
  private scopeContext(request: OAuthRequestRow, choice: TeamChoice): ScopeContext {
    const audience = audienceOf(request.resource, this.backend)
    return {
      ...(choice.selected === null ? {} : { team: choice.selected.name }),
      audience: choice.satellite !== null ? { kind: 'satellite', name: choice.satellite.name } : audience,
    }
  }

  /**
   * A repeat authorization within the scopes this user already approved for this client skips
   * the page: the code is issued at once. Null when consent must be asked.
   */
  async remembered(request: OAuthRequestRow, session: SessionCaller): Promise<string | null> {
    const { repository, teams } = this.deps
    // prompt=consent (and prompt=login) ask on the page, whatever was approved before.
    if (request.prompt !== null) return null
    const consent = await repository.findConsent(session.userId, request.clientId)
    if (consent === undefined || !isSubset(request.scope.split(' '), consent.scope.split(' '))) return null
    // Only to a redirect URI the user approved, port included: with loopback ports free (RFC 8252
    // §7.3), any local process could otherwise collect a code on a port of its own (§8.6).
    if (!approvedRedirectUris(consent.redirectUris).includes(request.redirectUri)) return null
    const choice = await this.chooser.choose(session.userId, request.clientId, request.resource)
    // A request whose resource is another team's (a satellite or endpoint of that team) asks again,
    // with that team selected, rather than binding the team approved last time.
    if (choice.named !== null && choice.named !== consent.teamId) return null
    const teamId = consent.teamId ?? choice.selected?.id ?? null
    if (teamId === null || (await teams.roleOf(session.userId, teamId)) === null) return null
    const consumed = await repository.consumeRequest(request.id, session.credentialId, nowOf(this.deps))
    if (consumed === undefined) return null
    return this.issueCode(consumed, session.user, teamId, false)
  }

  /** The sign-in form on the consent page gave the browser a new session: the request is now its. */
  async adopt(requestId: string, sessionId: string): Promise<void> {
    if (!(await this.deps.repository.rebindRequest(requestId, sessionId, nowOf(this.deps)))) throw errors.notFound('Authorization request')
  }

  /** POST /api/oauth2/consent: answers the URL the browser goes back to the client with. */
  async decide(input: ConsentDecision, session: SessionCaller): Promise<string> {
    const { repository, teams } = this.deps
    if (!(await loginEnabled(this.deps))) throw consentDisabled()
    const request = await repository.findRequest(input.request_id, nowOf(this.deps))
    if (request === undefined) throw errors.notFound('Authorization request')
    if (request.sessionId !== session.credentialId) throw anotherSession()
    if (!sameSecret(input.csrf_token, this.csrfToken(request.id, session.credentialId))) {
      throw new AppError(403, 'INVALID_CSRF_TOKEN', 'The form is stale or was not sent by this page: reload the consent page.')
    }
    let teamId: string | null = null
    if (input.decision === 'approve') {
      // Without a choice, the team the page preselected, worked out again here: never one the client names.
      teamId = input.team_id ?? (await this.chooser.choose(session.userId, request.clientId, request.resource)).selected?.id ?? null
      if (teamId === null || (await teams.roleOf(session.userId, teamId)) === null) {
        throw new AppError(400, 'INVALID_TEAM', 'Choose one of your own teams.')
      }
    }
    // Single use: of two decisions on one request, one gets it.
    const consumed = await repository.consumeRequest(request.id, session.credentialId, nowOf(this.deps))
    if (consumed === undefined) throw errors.notFound('Authorization request')
    if (teamId === null) {
      return clientRedirect(this.issuer, consumed.redirectUri, { error: 'access_denied', error_description: 'The user denied the request.', state: consumed.state })
    }
    return this.issueCode(consumed, session.user, teamId, true)
  }

  /** The code for an approved request, bound to client, redirect URI, PKCE challenge, user, scope and team. */
  private async issueCode(request: OAuthRequestRow, user: UserRow, teamId: string, remember: boolean): Promise<string> {
    const { database, repository, audit, digest } = this.deps
    const now = nowOf(this.deps)
    const code = randomToken()
    const grant: OAuthGrantRow = {
      id: newId(),
      clientId: request.clientId,
      userId: user.id,
      teamId,
      scope: request.scope,
      redirectUri: request.redirectUri,
      resource: request.resource,
      codeDigest: digest(code),
      codeChallenge: request.codeChallenge,
      codeExpiresAt: new Date(now.getTime() + CODE_LIFETIME_MS),
      codeUsedAt: null,
      revokedAt: null,
      createdAt: now,
    }
    await database.transaction(async (tx) => {
      const txRepository = repository.with(tx)
      await txRepository.insertGrant(grant)
      if (remember) {
        const earlier = await txRepository.findConsent(user.id, request.clientId)
        const redirectUris = rememberedRedirectUris(earlier?.redirectUris ?? null, request.redirectUri)
        await txRepository.rememberConsent({ userId: user.id, clientId: request.clientId, scope: request.scope, teamId, redirectUris, updatedAt: now })
        await audit.record('oauth.consent_approved', { actorId: user.id, target: request.clientId, details: { scope: request.scope, team_id: teamId } }, tx)
      }
    })
    return clientRedirect(this.issuer, request.redirectUri, { code, state: request.state })
  }

  csrfToken(requestId: string, sessionId: string): string {
    return createHmac('sha256', this.deps.csrfKey).update(`${requestId}.${sessionId}`).digest('base64url')
  }
}

/** The most redirect URIs remembered per (user, client); the oldest approval is forgotten first. */
export const MAX_REMEMBERED_REDIRECT_URIS = 10

/** The redirect URIs a remembered consent covers; none for one recorded before they were kept. */
function approvedRedirectUris(stored: string | null): string[] {
  return stored === null || stored === '' ? [] : stored.split(' ')
}

/** `approved` first, then the earlier ones, at most MAX_REMEMBERED_REDIRECT_URIS. */
function rememberedRedirectUris(stored: string | null, approved: string): string {
  const earlier = approvedRedirectUris(stored).filter((uri) => uri !== approved)
  return [approved, ...earlier].slice(0, MAX_REMEMBERED_REDIRECT_URIS).join(' ')
}
