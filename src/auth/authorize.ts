import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError, errors } from '../http/errors.js'
import { storableText } from '../http/validation.js'
import { resourceChallenges, type BearerChallenges } from '../oauth2/protected-resource.js'
import type { Services } from '../services.js'
import type { Caller, SatelliteCaller, UserCaller } from './caller.js'
import { presentedBearer, presentedSession, SESSION_COOKIE } from './credentials-from-request.js'
import { roleHas } from './permissions.js'
import type { RoutePolicy } from './policies.js'

/**
 * The satellite routes' challenges. They are not OAuth resources (satellite keys and registration
 * tokens come from no authorization server), so they name no resource metadata.
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
 */
export async function authorize(request: FastifyRequest, reply: FastifyReply, routePolicy: RoutePolicy, services: Services): Promise<Caller | null> {
  if (routePolicy.kind === 'public') return null
  const caller = await identify(request, routePolicy, services)
  if (caller.kind === 'satellite') return admitSatellite(request, caller, routePolicy)
  if (caller.kind === 'registration') {
    // Pairing a satellite is a login of sorts: the master switch stops it too.
    if (!(await services.settings.get('global.enable_login'))) throw loginDisabled()
    return caller
  }
  // A session on a satellite route is only admitted (orAdminSession) for a global admin.
  if (routePolicy.kind === 'satellite' && caller.role !== 'global_admin') throw errors.forbidden({ required_permission: 'global_admin' })
  // A session renewed by this request gets its cookie again, with the new lifetime.
  if (caller.via === 'session' && 'renewedUntil' in caller && caller.renewedUntil instanceof Date) {
    services.sessions.setCookie(reply, request.cookies[SESSION_COOKIE]!, caller.renewedUntil)
  }

  if ((routePolicy.kind === 'dual' || routePolicy.kind === 'bearer') && caller.via === 'bearer' && !caller.scopes?.includes(routePolicy.scope)) {
    throw errors
      .forbidden({ required_scope: routePolicy.scope }, `Forbidden: insufficient_scope, this route needs the scope ${routePolicy.scope}.`)
      .withHeaders({ 'www-authenticate': oauthChallenges(services).insufficientScope[routePolicy.scope] })
  }
  // With login switched off, only global admins keep using their credentials.
  if (caller.role !== 'global_admin' && !(await services.settings.get('global.enable_login'))) {
    throw loginDisabled()
  }
  if ((routePolicy.kind === 'session' || routePolicy.kind === 'dual') && routePolicy.permission !== undefined) {
    if (!roleHas(caller.role, routePolicy.permission)) throw errors.forbidden({ required_permission: routePolicy.permission })
  }
  if ((routePolicy.kind === 'session' || routePolicy.kind === 'dual') && routePolicy.teamPermission !== undefined) {
    await authorizeTeam(request, caller, routePolicy.teamPermission, services)
  }
  return caller
}

async function identify(request: FastifyRequest, routePolicy: Exclude<RoutePolicy, { kind: 'public' }>, services: Services): Promise<Caller> {
  const verify = services.credentials
  const bearer = presentedBearer(request)
  switch (routePolicy.kind) {
    case 'session': {
      const session = presentedSession(request)
      // A bearer token is never accepted on a session-only route.
      if (session.kind !== 'session') {
        throw errors.unauthorized(bearer.kind === 'none' ? undefined : 'This route accepts a session cookie only.')
      }
      return (await verify.session(session.id)) ?? fail()
    }
    // Dual and bearer routes are the OAuth resources (RFC 9728): their refusals name its metadata.
    case 'dual': {
      if (bearer.kind === 'bearer') return (await verify.bearer(bearer.token)) ?? fail(oauthChallenges(services).invalidToken)
      if (bearer.kind !== 'none') fail(oauthChallenges(services).invalidToken)
      const session = presentedSession(request)
      if (session.kind === 'session') return (await verify.session(session.id)) ?? fail()
      return fail(oauthChallenges(services).missing)
    }
    case 'bearer': {
      // A session cookie is never accepted on a bearer-only route.
      if (bearer.kind === 'bearer') return (await verify.bearer(bearer.token)) ?? fail(oauthChallenges(services).invalidToken)
      return fail(oauthChallenges(services)[bearer.kind === 'none' ? 'missing' : 'invalidToken'])
    }
    case 'satellite': {
      if (bearer.kind === 'satellite_key') return (await verify.satelliteKey(bearer.secret)) ?? fail(PLAIN.invalidToken)
      if (bearer.kind !== 'none' || routePolicy.orAdminSession !== true) return fail(bearer.kind === 'none' ? PLAIN.missing : PLAIN.invalidToken)
      const session = presentedSession(request)
      if (session.kind === 'session') return (await verify.session(session.id)) ?? fail()
      return fail(PLAIN.missing)
    }
    case 'registration_token': {
      if (bearer.kind !== 'registration_token') return fail(PLAIN.missing)
      return (await verify.registrationToken(bearer.token, bearer.scope)) ?? fail(PLAIN.invalidToken)
    }
  }
}

async function authorizeTeam(request: FastifyRequest, caller: UserCaller, permission: Parameters<typeof roleHas>[1], services: Services): Promise<void> {
  if (caller.role === 'global_admin') return
  const params = request.params as Record<string, string | undefined>
  const teamId = params.teamId ?? params.id
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

function fail(wwwAuthenticate?: string): never {
  const error = errors.unauthorized()
  throw wwwAuthenticate ? error.withHeaders({ 'www-authenticate': wwwAuthenticate }) : error
}
