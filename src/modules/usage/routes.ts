import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { roleHas } from '../../auth/permissions.js'
import { policy } from '../../auth/policies.js'
import { userCaller } from '../../http/current-user.js'
import { paginate } from '../../http/envelope.js'
import type { FastifyInstance } from 'fastify'
import { CallsAnswer, CallsBody, CallsPage, CallsQuery, InstallationCallsParams, MAX_CALLS, MAX_DURATION_MS, MAX_TOOL_NAME, UsageAnswer, UsageParams, UsageQuery } from './schemas.js'
import { MAX_SPAN_DAYS, type UsageViewer } from './service.js'
import { InstanceParams } from '../channel/schemas.js'

/** A satellite's own key, on its own id only. */
const self = policy.satellite({ self: 'id' })
/** Members of the team (and global admins), by session or by a bearer token with `mcp:read`. */
const read = policy.dual('mcp:read', { teamPermission: 'team.installations.view' })
const BODY_LIMIT = 1024 * 1024

const WHOSE_TEXT = "A member sees only their own calls (those made with their tokens); the team's admins (and global admins) see everyone's."
const BOUND_TEAM_TEXT = 'A bearer token bound to another team at consent → 403 `FORBIDDEN` with `details.bound_team_id`.'

async function viewerOf(app: FastifyInstance, request: FastifyRequest, teamId: string): Promise<UsageViewer> {
  const caller = userCaller(request)
  const role = caller.role === 'global_admin' ? 'global_admin' : await app.services.teams.roleOf(caller.userId, teamId)
  return { userId: caller.userId, admin: role !== null && roleHas(role, 'team.installations.manage') }
}

/** Tool calls: what satellites report of them, and the usage teams read. */
export const usageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const usage = () => app.services.toolUsage

  app.post('/api/satellites/:id/instances/:instanceId/calls', {
    config: { auth: self },
    bodyLimit: BODY_LIMIT,
    schema: {
      tags: ['Satellites'], summary: "Record an instance's tool calls",
      description: [
        `A batch of 1 to ${MAX_CALLS} tool calls the instance served or refused: when, the caller's user id and client id (null when unknown), the tool (1–${MAX_TOOL_NAME} characters),`,
        `the outcome and the duration (0–${MAX_DURATION_MS} ms); never arguments or results (the body is at most 1 MiB).`,
        'A batch id this satellite posted before (a retry) answers `{accepted: 0, duplicate: true}` and is counted once, also when both posts arrive at once.',
        "404 for an instance not in the satellite's current document (another satellite's, or one it no longer runs).",
        "With the satellite's own API key (`Authorization: Bearer service_satkey_…`), on its own id only (403 for another); a disabled satellite's key gets 403 SATELLITE_DISABLED.",
      ].join(' '),
      params: InstanceParams, body: CallsBody, response: { 200: CallsAnswer },
    },
  }, async (request) => {
    const calls = request.body.calls.map((call) => ({
      at: new Date(call.at), userId: call.user_id, clientId: call.client_id, tool: call.tool, outcome: call.outcome, durationMs: call.duration_ms,
    }))
    return { success: true as const, data: await usage().ingest(request.params.id, request.params.instanceId, request.body.batch_id, calls) }
  })

  app.get('/api/teams/:teamId/mcp/usage', {
    config: { auth: read },
    schema: {
      tags: ['MCP Installations'], summary: "The team's tool calls, counted",
      description: [
        'Calls, outcomes and the average duration for a period, grouped by `tool`, `user`, `installation` or `day` (UTC), the busiest first (days in order).',
        'Counted per hour: `from` is rounded down and `to` up to the hour, and the answer says which hours it covers. Default: the 7 days before now, by tool.',
        `\`from\` must be before \`to\`, and the period at most ${MAX_SPAN_DAYS} days (else 400). Hourly figures are kept \`USAGE_RETENTION_DAYS\` (default 90).`,
        WHOSE_TEXT, BOUND_TEAM_TEXT,
      ].join(' '),
      params: UsageParams, querystring: UsageQuery, response: { 200: UsageAnswer },
    },
  }, async (request) => {
    const { teamId } = request.params
    const answer = await usage().usage(teamId, await viewerOf(app, request, teamId), request.query)
    return {
      success: true as const,
      data: {
        from: answer.from.toISOString(), to: answer.to.toISOString(), group_by: answer.group,
        rows: answer.rows.map((row) => ({
          key: row.key, calls: row.calls, ok: row.ok, error: row.error, refused: row.refused,
          avg_duration_ms: row.calls === 0 ? 0 : Math.round((row.durationMsSum / row.calls) * 10) / 10,
        })),
      },
    }
  })

  app.get('/api/teams/:teamId/mcp/installations/:id/calls', {
    config: { auth: read },
    schema: {
      tags: ['MCP Installations'], summary: "The installation's tool calls, newest first",
      description: [
        'The calls of the last 7 days as its satellite reported them (when, user, client, tool, outcome, duration; never arguments or results).',
        `${WHOSE_TEXT} 404 for an installation of another team. ${BOUND_TEAM_TEXT}`,
      ].join(' '),
      params: InstallationCallsParams, querystring: CallsQuery, response: { 200: CallsPage },
    },
  }, async (request) => {
    const { limit = 20, offset = 0 } = request.query
    const { teamId, id } = request.params
    const page = await usage().calls(teamId, id, await viewerOf(app, request, teamId), limit, offset)
    return {
      success: true as const,
      data: {
        calls: page.rows.map((row) => ({
          id: row.id, at: row.at.toISOString(), instance_id: row.instanceId, user_id: row.userId, client_id: row.clientId,
          tool: row.tool, outcome: row.outcome, duration_ms: row.durationMs,
        })),
        pagination: paginate(page.total, limit, offset),
      },
    }
  })
}
