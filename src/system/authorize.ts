import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Caller, SatelliteCaller, UserCaller } from '../auth/caller.js'
import { presentedBearer, presentedSession, SESSION_COOKIE } from '../auth/credentials-from-request.js'
import { roleHas } from '../auth/permissions.js'
import type { RoutePolicy } from '../auth/policies.js'
import { anotherTeam, boundTeam } from '../http/team-reach.js'
import { AppError, errors } from '../http/errors.js'
import { storableText } from '../http/validation.js'
import { resourceChallenges, type BearerChallenges } from '../oauth2/protected-resource.js'
import type { Services } from '../services.js'
import { routeOptionsOf } from '../http/route-options.js'
import { secondFactorRule } from '../modules/two-factor/gate.js'

/**
 * The satellite and metrics routes' challenges. They are not OAuth resources (satellite keys,
 * registration tokens and METRICS_TOKEN come from no authorization server), so they name no
 * resource metadata.
 */
const PLAIN: Omit<BearerChallenges, 'insufficientScope'> = { missing: 'Bearer', invalidToken: 'Bearer error="invalid_token"' }

/** The OAuth routes' challenges, built once per authorization server (i.e. per app and database). */
const challengesByServer = new WeakMap<Services['oauth'], BearerChallenges>()

function oauthChallenges(services: Services): BearerChallenges {
  let challenges = challengesByServer.get(services.oauth)
  if (challenges === undefined) {
    // The issuer is PUBLIC_URL: this service is both the resource and its authorization server.
    challenges = resourceChallenges(services.oauth.issuer)
    challengesByServer.set(services.oauth, challenges)
  }
  return challenges
}

/**
 * Identify the caller with the one credential kind the route admits, then enforce
 * the route's requirements. Runs in `onRequest`, before the body is read, so an unauthorized
 * caller learns nothing about its body (401/403 even for malformed or oversized bodies).
 *
 * A request that presents no usable credential at all is refused synchronously (the AppError is
 * returned, not thrown): the most common refusal then costs no promise. Refusals found later
 * are rejections of the returned promise.
 */
export function authorize(request: FastifyRequest, reply: FastifyReply, routePolicy: RoutePolicy, services: Services): AppError | Promise<Caller | null> {
  if (routePolicy.kind === 'public') return Promise.resolve(null)
  if (routePolicy.kind === 'dual' && routePolicy.publicWhen !== undefined && presentsNothing(request)) {
    return openToAnonymous(services, routePolicy.publicWhen).then((open) => (open ? null : fail(oauthChallenges(services).missing)))
  }
  const identified = identify(request, routePolicy, services)
  if (identified instanceof AppError) return identified
  return identified.then((caller) => admit(request, reply, routePolicy, services, caller))
}

/**
 * The route's requirements for an identified caller. Runs inside the lookup's `then`: a throw is
 * the refusal, and what needs no further lookup (most requests) is returned as it is, not wrapped
 * in a promise the chain would have to unwrap.
 */
function admit(request: FastifyRequest, reply: FastifyReply, routePolicy: RoutePolicy, services: Services, caller: Caller): Caller | Promise<Caller> {
  if (caller.kind === 'scraper') return caller
  if (caller.kind === 'satellite') return admitSatellite(request, caller, routePolicy)
  if (caller.kind === 'registration') {
    // Pairing a satellite is a login of sorts: the master switch stops it too.
    return loginEnabled(services).then(() => caller)
  }
  // A session on a satellite route (orAdminSession) or on the metrics is only admitted for a global admin.
  if ((routePolicy.kind === 'satellite' || routePolicy.kind === 'metrics') && caller.role !== 'global_admin') {
    throw errors.forbidden({ required_permission: 'global_admin' })
  }
  // A session renewed by this request gets its cookie again, with the new lifetime.
  if (caller.via === 'session' && 'renewedUntil' in caller && caller.renewedUntil instanceof Date) {
    services.sessions.setCookie(reply, request.cookies[SESSION_COOKIE]!, caller.renewedUntil)
  }

  if ((routePolicy.kind === 'dual' || routePolicy.kind === 'bearer') && caller.via === 'bearer' && !caller.scopes?.includes(routePolicy.scope)) {
    throw errors
      .forbidden({ required_scope: routePolicy.scope }, `Forbidden: insufficient_scope, this route needs the scope ${routePolicy.scope}.`)
      .withHeaders({ 'www-authenticate': oauthChallenges(services).insufficientScope[routePolicy.scope] })
  }
  // With login switched off, only global admins keep using their credentials; they may have to
  // enrol in two-factor authentication first (global.require_2fa_for_admins).
  if (caller.role === 'global_admin') return secondFactorRule(caller, routeOptionsOf(request).config, services, () => admitUser(request, routePolicy, services, caller))
  return loginEnabled(services).then(() => admitUser(request, routePolicy, services, caller))
}

/** A user caller's role and team permissions, once the login switch has let them through. */
function admitUser(request: FastifyRequest, routePolicy: RoutePolicy, services: Services, caller: UserCaller): UserCaller | Promise<UserCaller> {
  if ((routePolicy.kind === 'session' || routePolicy.kind === 'dual') && routePolicy.permission !== undefined) {
    if (!roleHas(caller.role, routePolicy.permission)) throw errors.forbidden({ required_permission: routePolicy.permission })
  }
  if ((routePolicy.kind === 'session' || routePolicy.kind === 'dual') && routePolicy.teamPermission !== undefined) {
    return authorizeTeam(request, caller, routePolicy.teamPermission, services).then(() => caller)
  }
  return caller
}

async function loginEnabled(services: Services): Promise<void> {
  if (!(await services.settings.get('global.enable_login'))) throw loginDisabled()
}

/** No Authorization header and no session cookie: an anonymous caller (anything presented is checked). */
const presentsNothing = (request: FastifyRequest): boolean =>
  request.headers.authorization === undefined && presentedSession(request).kind === 'none'

/**
 * Whether the boolean setting that opens a dual route is on. The settings service serves it from
 * its cache (revalidated every few seconds), so an anonymous read costs no query most of the time;
 * a key that is not a boolean setting (a plugin's that is gone) keeps the route closed.
 */
async function openToAnonymous(services: Services, key: string): Promise<boolean> {
  if (services.settings.definition(key)?.type !== 'boolean') return false
  return (await services.settings.value(key)) === true
}

/** A credential check's answer: the caller, or the refusal (thrown inside the promise chain). */
const orRefuse = (wwwAuthenticate?: string) => <C extends Caller>(caller: C | null | undefined): C => caller ?? fail(wwwAuthenticate)

/** The caller behind the credential the route admits; an AppError when none is even presented. */
function identify(request: FastifyRequest, routePolicy: Exclude<RoutePolicy, { kind: 'public' }>, services: Services): AppError | Promise<Caller> {
  const verify = services.credentials
  const bearer = presentedBearer(request)
  switch (routePolicy.kind) {
    case 'session': {
      const session = presentedSession(request)
      // A bearer token is never accepted on a session-only route.
      if (session.kind !== 'session') {
        return errors.unauthorized(bearer.kind === 'none' ? undefined : 'This route accepts a session cookie only.')
      }
      return verify.session(session.id).then(orRefuse())
    }
    // Dual and bearer routes are the OAuth resources (RFC 9728): their refusals name its metadata.
    case 'dual': {
      if (bearer.kind === 'bearer') return verify.bearer(bearer.token).then(orRefuse(oauthChallenges(services).invalidToken))
      // A personal access token stands in for an access token here, with the same scope and team rules.
      if (bearer.kind === 'personal_token') return verify.personalToken(bearer.token).then(orRefuse(oauthChallenges(services).invalidToken))
      if (bearer.kind !== 'none') return refusal(oauthChallenges(services).invalidToken)
      const session = presentedSession(request)
      if (session.kind === 'session') return verify.session(session.id).then(orRefuse())
      return refusal(oauthChallenges(services).missing)
    }
    case 'bearer': {
      // A session cookie is never accepted on a bearer-only route, nor a personal access token:
      // the only one, userinfo, answers OpenID Connect clients, which hold OAuth access tokens.
      if (bearer.kind === 'bearer') return verify.bearer(bearer.token).then(orRefuse(oauthChallenges(services).invalidToken))
      return refusal(oauthChallenges(services)[bearer.kind === 'none' ? 'missing' : 'invalidToken'])
    }
    case 'satellite': {
      if (bearer.kind === 'satellite_key') return verify.satelliteKey(bearer.secret).then(orRefuse(PLAIN.invalidToken))
      if (bearer.kind !== 'none' || routePolicy.orAdminSession !== true) return refusal(bearer.kind === 'none' ? PLAIN.missing : PLAIN.invalidToken)
      const session = presentedSession(request)
      if (session.kind === 'session') return verify.session(session.id).then(orRefuse())
      return refusal(PLAIN.missing)
    }
    case 'registration_token': {
      if (bearer.kind !== 'registration_token') return refusal(PLAIN.missing)
      return verify.registrationToken(bearer.token, bearer.scope).then(orRefuse(PLAIN.invalidToken))
    }
    case 'metrics': {
      if (bearer.kind === 'bearer') return verify.metricsToken(bearer.token).then(orRefuse(PLAIN.invalidToken))
      if (bearer.kind !== 'none') return refusal(PLAIN.invalidToken)
      const session = presentedSession(request)
      if (session.kind === 'session') return verify.session(session.id).then(orRefuse())
      return refusal(PLAIN.missing)
    }
  }
}

async function authorizeTeam(request: FastifyRequest, caller: UserCaller, permission: Parameters<typeof roleHas>[1], services: Services): Promise<void> {
  const params = request.params as Record<string, string | undefined>
  const teamId = params.teamId ?? params.id
  // A token bound to a team reaches no other, a global admin's included, and a member of both
  // teams too: 403 for any other id, so the answer says nothing of whether that team exists.
  const bound = boundTeam(caller)
  if (bound !== null && teamId !== bound) throw anotherTeam(bound)
  if (caller.role === 'global_admin') return
  // This hook runs before the params are validated: an id no database can hold names no team.
  const role = teamId === undefined || !storableText(teamId) ? null : await services.credentials.teamRole(caller.userId, teamId)
  // A non-member learns nothing about the team's existence.
  if (role === null) throw errors.notFound('Team')
  if (!roleHas(role, permission)) throw errors.forbidden({ required_permission: permission })
}

/** A satellite key: refused when its satellite is disabled, and valid only for its own satellite. */
function admitSatellite(request: FastifyRequest, caller: SatelliteCaller, routePolicy: RoutePolicy): SatelliteCaller {
  if (caller.disabled) throw errors.satelliteDisabled()
  const self = routePolicy.kind === 'satellite' ? routePolicy.self : undefined
  if (self !== undefined && (request.params as Record<string, string | undefined>)[self] !== caller.satelliteId) {
    throw errors.forbidden({ required_satellite: 'the satellite its key belongs to' }, 'Forbidden: a satellite key acts only on its own satellite.')
  }
  return caller
}

const loginDisabled = () => new AppError(403, 'LOGIN_DISABLED', 'Login is disabled on this service.')

/**
 * 401, with the route's `WWW-Authenticate` challenge when it has one. The same few answers are
 * given over and over (no credential, an unknown one), so each is made once per challenge: the
 * error handler only reads them.
 */
function refusal(wwwAuthenticate?: string): AppError {
  let error = refusals.get(wwwAuthenticate)
  if (error === undefined) {
    error = errors.unauthorized()
    if (wwwAuthenticate) error.withHeaders({ 'www-authenticate': wwwAuthenticate })
    refusals.set(wwwAuthenticate, error)
  }
  return error
}

const refusals = new Map<string | undefined, AppError>()

function fail(wwwAuthenticate?: string): never {
  throw refusal(wwwAuthenticate)
}
