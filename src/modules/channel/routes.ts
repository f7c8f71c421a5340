import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { policy } from '../../auth/policies.js'
import { errors } from '../../http/errors.js'
import { MAX_WAIT_SECONDS } from './desired-states.js'
import {
  CountEnvelope, DesiredStateEnvelope, DesiredStateQuery, InstanceParams, LOG_LINE_BYTES, LogsBody, MAX_LOG_LINES, MAX_TOOLS,
  ObservedStateBody, ObservedStateEnvelope, SatelliteParams, ToolsBody,
} from './schemas.js'
import { Ok } from '../../http/envelope.js'
import { Type } from 'typebox'

const tags = ['Satellites']
/** A satellite's own key, on its own id only. */
const self = policy.satellite({ self: 'id' })
/** 500 lines of up to 8 KiB each, with their JSON. */
const LOGS_BODY_LIMIT = 5 * 1024 * 1024

/**
 * Nothing at all, which Fastify sends with no Content-Length (the 304's schema says null, whose
 * serialization "null" would be announced as 4 bytes that never come: clients that trust the
 * length wait for them).
 */
const NO_BODY = undefined as unknown as null

const KEY_TEXT = "With the satellite's own API key (`Authorization: Bearer service_satkey_…`), on its own id only (403 for another); a disabled satellite's key gets 403 SATELLITE_DISABLED."

/** The satellite control channel: what a satellite must run, and what it reports back. */
export const channelRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const channel = () => app.services.channel

  app.get('/api/satellites/:id/desired-state', {
    config: { auth: self },
    schema: {
      tags, summary: "The satellite's desired-state document (long-poll)",
      description: [
        'The complete list of instances the satellite must run (level-triggered: anything not in it must not run). The answer carries `ETag`.',
        `Send it back in \`If-None-Match\`: while the document is unchanged the answer is 304, held up to \`wait\` seconds (at most ${MAX_WAIT_SECONDS}) first;`,
        'a change answers the held request at once (within about a second of its commit, also when another instance of the service made it).',
        'Secret values are sealed to the public key the satellite registered; a satellite without one is given no instance that has secrets.',
        KEY_TEXT,
      ].join(' '),
      params: SatelliteParams, querystring: DesiredStateQuery,
      headers: Type.Object({ 'if-none-match': Type.Optional(Type.String({ maxLength: 200 })) }),
      response: { 200: DesiredStateEnvelope, 304: Type.Null({ description: 'Unchanged: the ETag sent is current.' }) },
    },
  }, async (request, reply) => {
    let closed = false
    request.raw.once('close', () => (closed = true))
    const answer = await channel().documents.answer(request.params.id, request.headers['if-none-match'], request.query.wait ?? 0, () => closed)
    if (answer.kind === 'gone') throw errors.unauthorized()
    if (answer.kind === 'disabled') throw errors.satelliteDisabled()
    reply.header('cache-control', 'no-store')
    if (answer.kind === 'unchanged') return reply.code(304).header('etag', answer.etag).send(NO_BODY)
    reply.header('etag', answer.built.etag)
    return { success: true as const, data: answer.built.document }
  })

  app.put('/api/satellites/:id/observed-state', {
    config: { auth: self },
    schema: {
      tags, summary: 'Report the phase of each instance',
      description: [
        'The phase of each instance for the `spec_hash` it runs. A report about an instance that is not in the satellite\'s current document',
        '(another satellite\'s, or one it no longer runs), or about a spec that is no longer current, is ignored and counted in `ignored`.',
        KEY_TEXT,
      ].join(' '),
      params: SatelliteParams, body: ObservedStateBody, response: { 200: ObservedStateEnvelope },
    },
  }, async (request) => {
    return { success: true as const, data: await channel().reports.observed(request.params.id, request.body.instances) }
  })

  app.put('/api/satellites/:id/instances/:instanceId/tools', {
    config: { auth: self },
    schema: {
      tags, summary: 'Report the tools an instance serves',
      description: `The full list (at most ${MAX_TOOLS} tools), replacing the previous one; the installation's readers see it. 404 for an instance not in the satellite's current document. ${KEY_TEXT}`,
      params: InstanceParams, body: ToolsBody, response: { 200: CountEnvelope },
    },
  }, async (request) => {
    return { success: true as const, data: { stored: await channel().reports.tools(request.params.id, request.params.instanceId, request.body.tools) } }
  })

  app.post('/api/satellites/:id/instances/:instanceId/logs', {
    config: { auth: self },
    bodyLimit: LOGS_BODY_LIMIT,
    schema: {
      tags, summary: "Append an instance's log lines",
      description: [
        `At most ${MAX_LOG_LINES} lines of at most ${LOG_LINE_BYTES} characters each (a body of up to 5 MiB). The newest 1 000 lines of each instance are kept.`,
        "The instance's own secret values are masked (`[secret]`) before anything is stored. 404 for an instance not in the satellite's current document.",
        KEY_TEXT,
      ].join(' '),
      params: InstanceParams, body: LogsBody, response: { 200: CountEnvelope },
    },
  }, async (request) => {
    return { success: true as const, data: { stored: await channel().reports.logs(request.params.id, request.params.instanceId, request.body.lines) } }
  })
}
