import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { RegistrationCaller, SatelliteCaller } from '../../auth/caller.js'
import { policy } from '../../auth/policies.js'
import { errors } from '../../http/errors.js'
import { HeartbeatBody, HeartbeatEnvelope, IdParams, RegisteredEnvelope, RegisterBody } from './schemas.js'
import { HEARTBEAT_INTERVAL_SECONDS } from './service.js'
import { satelliteView } from './views.js'

const tags = ['Satellites']

function callerOf<K extends 'registration' | 'satellite'>(request: FastifyRequest, kind: K): Extract<RegistrationCaller | SatelliteCaller, { kind: K }> {
  const caller = request.caller
  if (caller === null || caller.kind !== kind) throw errors.unauthorized()
  return caller as Extract<RegistrationCaller | SatelliteCaller, { kind: K }>
}

/** The routes a satellite calls: pairing with a registration token, then heartbeats with its key. */
export const satelliteAgentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const satellites = () => app.services.satellites

  app.post('/api/satellites/register', {
    config: { auth: policy.registrationToken(), limit: 'satelliteRegistration' },
    schema: {
      tags, summary: 'Pair a satellite (registration token only)',
      description: 'Send `Authorization: Bearer service_satellite_<scope>_<JWT>`. Any other credential, or none, is 401 UNAUTHORIZED; ' +
        'a token with a bad signature, another issuer or audience, expired, used or revoked is 401 INVALID_REGISTRATION_TOKEN with `details.reason`. ' +
        'The token is spent in the same transaction that creates the satellite: it works once, also under concurrent use, and a refused registration does not spend it. ' +
        'A name already registered in the same scope and team re-registers that satellite (a new key; the old one stops working); ' +
        'a name held by another scope or team is 409 SATELLITE_NAME_TAKEN, a disabled satellite 409 SATELLITE_DISABLED. ' +
        '`isolation` and `runtimes` say how it keeps instances apart and what it can launch (a registration says them anew: absent, `none` and `[]`); ' +
        "a global satellite registering without isolation gives up the installations of team-defined servers before this answer (they are placed again elsewhere, or wait). " +
        'The API key is shown once. 403 LOGIN_DISABLED while login is switched off; 10 attempts a minute per IP.',
      body: RegisterBody, response: { 201: RegisteredEnvelope },
    },
  }, async (request, reply) => {
    const { satellite, apiKey } = await satellites().register(callerOf(request, 'registration'), request.body, request.ip)
    // Registered again without isolation, a global satellite gives up team servers before it reads a document.
    await app.services.installations.moves.releaseFrom(satellite)
    const view = satelliteView(satellite, satellites().silentSince())
    return reply.code(201).send({
      success: true as const,
      message: 'Satellite registered. Keep the API key: it is not shown again.',
      data: { satellite: { id: view.id, name: view.name, satellite_type: view.satellite_type, team_id: view.team_id, status: view.status }, api_key: apiKey },
    })
  })

  app.post('/api/satellites/:id/heartbeat', {
    config: { auth: policy.satellite({ self: 'id' }) },
    schema: {
      tags, summary: "A satellite's heartbeat (its own API key)",
      description: `Send every ${HEARTBEAT_INTERVAL_SECONDS} s with \`Authorization: Bearer service_satkey_…\`. Records the metrics and the time; ` +
        'the reported status replaces the stored one (the first heartbeat ends `inactive`). After 90 s without one the satellite is shown `offline`. ' +
        '`isolation` and `runtimes`, when sent, replace what the satellite reported before (absent: unchanged). A global satellite whose isolation is `none`, ' +
        'or while `global.team_servers_on_global_satellites` is off, gives up the installations of team-defined servers here (they are placed again elsewhere, or wait); ' +
        'then the satellite takes the installations waiting that it may run. ' +
        "A key acts only on its own satellite (403 for another id); a disabled satellite's key is 403 SATELLITE_DISABLED, a deleted one's 401.",
      params: IdParams, body: HeartbeatBody, response: { 200: HeartbeatEnvelope },
    },
  }, async (request) => {
    callerOf(request, 'satellite')
    const row = await satellites().heartbeat(request.params.id, request.body)
    // An online satellite takes the installations waiting for one (a global one reporting no isolation first gives up team servers).
    await app.services.installations.moves.placeWaiting(row)
    const view = satelliteView(row, satellites().silentSince())
    return {
      success: true as const,
      data: { satellite: { id: view.id, satellite_type: view.satellite_type, status: view.status, last_heartbeat_at: view.last_heartbeat_at! }, heartbeat_interval_seconds: HEARTBEAT_INTERVAL_SECONDS },
    }
  })
}
