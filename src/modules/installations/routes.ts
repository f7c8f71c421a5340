import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { roleHas } from '../../auth/permissions.js'
import { policy } from '../../auth/policies.js'
import { teamWithinReach } from '../../http/team-reach.js'
import { requestActor, userCaller } from '../../http/current-user.js'
import { paginate } from '../../http/envelope.js'
import { errors } from '../../http/errors.js'
import {
  ClientConfigAnswer, ClientConfigQuery, CreateInstallationBody, Done, InstallationEnvelope, InstallationPage, InstallationParams, ListQuery,
  LogsEnvelope, MyListQuery, MyValuesEnvelope, TeamParams, ToolsEnvelope, UpdateInstallationBody, ValuesBody,
  ApproveToolsBody, ToolPolicyBody, ToolPolicyEnvelope,
} from './schemas.js'
import type { InstallationList } from './installation-reads.js'
import { CLIENT_CONFIG_FILE_NAMES, clientConfigDocument, wantsDownload } from './client-config.js'
import { SerializedAnswers } from '../../http/serializers.js'

const tags = ['MCP Installations']
/** Reads: members of the team (and global admins), by session or by a bearer token with `mcp:read`. */
const read = policy.dual('mcp:read', { teamPermission: 'team.installations.view' })
/** Writes: the team's admins (and global admins), by session only — the command-line client cannot change installations. */
const manage = policy.session({ teamPermission: 'team.installations.manage' })
/** A member's own values: any member, by session only. */
const ownValues = policy.session({ teamPermission: 'team.installations.view' })

const SECRETS_TEXT = 'Secret values are write-only: no answer shows one again (`is_set` says whether it is set), and no log line or audit event holds one.'
const VIEW_TEXT = [
  'Each installation reads from the caller\'s point of view: `inputs` carry the team\'s values and the caller\'s own (never another member\'s),',
  '`missing_inputs` lists the required inputs without a value or default (the team\'s, then the caller\'s own), and `status` is derived when read.',
  SECRETS_TEXT,
].join(' ')
const VALUES_TEXT = [
  'Values are text whatever the input\'s format; `choices` and `format` (`number`, `boolean`, `filepath`) are checked.',
  'Every key is checked first: an unknown key, a key of the other scope or a value that does not fit → 400 `VALIDATION_ERROR` with one `details` entry per key (`values.<key>`), and nothing is written.',
  'An `env:` key of a variable that changes how a runtime loads code (`NODE_OPTIONS`, `LD_PRELOAD`, … — only on entries stored before those were refused) takes no value (400); `null` may unset it.',
].join(' ')

const PLACEMENT_TEXT = [
  'Without `satellite_id`, it is placed on the team\'s online satellite with the fewest installations, else on such a global satellite that may run it and has room for the team, else left unplaced (`pending`, with the reason) until one comes online.',
  'A server the team defined itself (visibility `team`) runs on a global satellite only while `global.team_servers_on_global_satellites` is on and that satellite isolates its instances (its `isolation` is not `none`).',
  'A team places at most `global.team_quota_per_global_satellite` installations on one global satellite (a per-user installation counts once).',
  'An explicit `satellite_id`: another team\'s satellite → 404; a disabled one, or a global one a team server may not run on → 400 naming `satellite_id` and saying why; a global one where the team is at its quota → 409 `SATELLITE_QUOTA_EXCEEDED`.',
].join(' ')
const NETWORK_TEXT = '`network: "none"` (default `full`) asks the satellite to give the instances no network at all; a change restarts them; with a remote target → 400 naming `network`.'
const MOVE_TEXT = [
  'A per-user installation moved to a team\'s satellite (here, or placed again after its satellite is disabled or deleted) drops the members\' own values that were not set for that satellite\'s key:',
  'each member sees those inputs missing, with the reason, and sets them again to have them used there (audited as `installation.own_values_dropped`, keys only). A move to a global satellite keeps them.',
].join(' ')
const OWN_VALUES_TEXT = [
  'A member\'s own values are used on a global satellite, or on the satellite whose public key they were set for (the one the installation is on when they are set):',
  'moved to another team satellite, or its satellite registered again with another key, they read as unset (`is_set: false`, with `unset_reason`) until set again.',
].join(' ')

/** What a bearer token bound to a team reaches of the caller-wide views. */
const BOUND_MINE_TEXT = [
  'A bearer token bound to a team at consent answers for that team alone; `team_id` naming another team → 403 `FORBIDDEN` with `details.bound_team_id`',
  '(refused rather than answered empty, so a client holding the wrong token learns why). Sessions, and tokens bound to no team, answer for every team of the caller.',
].join(' ')
/** The team routes a bearer token bound to a team reaches. */
const BOUND_TEAM_TEXT = 'A bearer token bound to another team at consent → 403 `FORBIDDEN` with `details.bound_team_id`, even for a member (or a global admin) of this team.'

/** A list answered again while nothing it shows changed is the same object: its bytes are serialized once. */
const lists = new SerializedAnswers<InstallationList>()

/** Installations: what a team runs, with its values; and what the command-line client reads of them. */
export const installationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const installations = () => app.services.installations

  app.get('/api/teams/:teamId/mcp/installations', {
    config: { auth: read },
    schema: {
      tags, summary: "The team's installations, by name",
      description: `${VIEW_TEXT} ${BOUND_TEAM_TEXT}`, params: TeamParams, querystring: ListQuery, response: { 200: InstallationPage },
    },
  }, async (request, reply) => {
    const { limit = 20, offset = 0 } = request.query
    const page = await installations().reads.list(request.params.teamId, requestActor(request), limit, offset)
    return lists.send(reply, page, () => ({ success: true as const, data: { installations: page.views, pagination: paginate(page.total, limit, offset) } }))
  })

  app.post('/api/teams/:teamId/mcp/installations', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Install a catalogue server for the team',
      description: [
        'The server (by id or slug) must be visible to the team: a global server, or one of the team\'s own (404 otherwise).',
        'Without `version`, the latest version is installed and followed (`track_latest` defaults to true); with it, that exact version is pinned.',
        'A yanked or deprecated version, a disabled server, or a server without an active version → 409 `VERSION_NOT_INSTALLABLE`.',
        'The inputs are derived from the version for the target (default: the first package, else the first remote); a target that does not exist or cannot run → 400 naming `target`,',
        'also a package that would make a satellite run more than itself (a `file:` or URL version, a runner option, a variable such as `NODE_OPTIONS`; see the catalogue\'s entry rules).',
        '`user_scoped` names the keys each member sets for themselves; `values` sets team-scoped keys.',
        'Without `name`, the server\'s slug is used, suffixed (`-2`, `-3`…) while taken; an explicit name that is taken → 409 `INSTALLATION_NAME_TAKEN`.',
        `${PLACEMENT_TEXT} ${NETWORK_TEXT} ${VALUES_TEXT}`,
      ].join(' '),
      params: TeamParams, body: CreateInstallationBody, response: { 201: InstallationEnvelope },
    },
  }, async (request, reply) => {
    const installation = await installations().writes.create(request.params.teamId, request.body, requestActor(request))
    return reply.code(201).send({ success: true as const, message: 'Installation created.', data: { installation } })
  })

  app.get('/api/teams/:teamId/mcp/installations/:id', {
    config: { auth: read },
    schema: {
      tags, summary: 'One installation of the team',
      description: `Another team's installation → 404. ${VIEW_TEXT} ${BOUND_TEAM_TEXT}`,
      params: InstallationParams, response: { 200: InstallationEnvelope },
    },
  }, async (request) => {
    return { success: true as const, data: { installation: await installations().reads.get(request.params.teamId, request.params.id, requestActor(request)) } }
  })

  app.patch('/api/teams/:teamId/mcp/installations/:id', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Change an installation',
      description: [
        'Only the fields sent change. A new `version`, `target` or `user_scoped` derives the inputs again: values of keys that remain in the same scope are kept, the others are dropped.',
        'Turning `track_latest` on moves to the latest version. `satellite_id: null` asks for the automatic placement again.',
        'The rules of creation apply (409 `VERSION_NOT_INSTALLABLE`, 409 `INSTALLATION_NAME_TAKEN`, 409 `SATELLITE_QUOTA_EXCEEDED`, 400 naming `target`, `user_scoped`, `satellite_id` or `network`).',
        `${PLACEMENT_TEXT} ${NETWORK_TEXT} ${MOVE_TEXT}`,
      ].join(' '),
      params: InstallationParams, body: UpdateInstallationBody, response: { 200: InstallationEnvelope },
    },
  }, async (request) => {
    const installation = await installations().writes.update(request.params.teamId, request.params.id, request.body, requestActor(request))
    return { success: true as const, message: 'Installation updated.', data: { installation } }
  })

  app.put('/api/teams/:teamId/mcp/installations/:id/values', {
    config: { auth: manage },
    schema: {
      tags, summary: "Set or unset the team's values",
      description: `For team-scoped keys only (each member sets user-scoped keys under my-values); \`null\` unsets. ${VALUES_TEXT} ${SECRETS_TEXT}`,
      params: InstallationParams, body: ValuesBody, response: { 200: InstallationEnvelope },
    },
  }, async (request) => {
    const installation = await installations().values.setValues(request.params.teamId, request.params.id, request.body.values, requestActor(request))
    return { success: true as const, message: 'Values saved.', data: { installation } }
  })

  app.get('/api/teams/:teamId/mcp/installations/:id/my-values', {
    config: { auth: read },
    schema: {
      tags, summary: "The caller's own values of the user-scoped inputs",
      description: `Each user-scoped input with the caller's \`is_set\` (and \`value\`, unless it is a secret). ${OWN_VALUES_TEXT} ${SECRETS_TEXT} ${BOUND_TEAM_TEXT}`,
      params: InstallationParams, response: { 200: MyValuesEnvelope },
    },
  }, async (request) => {
    return { success: true as const, data: { values: await installations().reads.myValues(request.params.teamId, request.params.id, requestActor(request)) } }
  })

  app.put('/api/teams/:teamId/mcp/installations/:id/my-values', {
    config: { auth: ownValues },
    schema: {
      tags, summary: "Set or unset the caller's own values",
      description: `For user-scoped keys only, by a member of the team (a global admin who is not a member has no values of their own: 403). ${OWN_VALUES_TEXT} ${VALUES_TEXT} ${SECRETS_TEXT}`,
      params: InstallationParams, body: ValuesBody, response: { 200: MyValuesEnvelope },
    },
  }, async (request) => {
    const values = await installations().values.setMyValues(request.params.teamId, request.params.id, request.body.values, requestActor(request))
    return { success: true as const, message: 'Your values were saved.', data: { values } }
  })

  app.post('/api/teams/:teamId/mcp/installations/:id/restart', {
    config: { auth: manage },
    schema: {
      tags, summary: "Restart the installation's instances",
      description: 'Counts a restart generation: the satellite restarts every instance of the installation when it next reads what to run.',
      params: InstallationParams, response: { 200: InstallationEnvelope },
    },
  }, async (request) => {
    const installation = await installations().writes.restart(request.params.teamId, request.params.id, requestActor(request))
    return { success: true as const, message: 'Restart requested.', data: { installation } }
  })

  app.delete('/api/teams/:teamId/mcp/installations/:id', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Delete an installation',
      description: 'Removes it with every value (the team\'s and the members\' own); its satellite stops it when it next reads what to run.',
      params: InstallationParams, response: { 200: Done },
    },
  }, async (request) => {
    await installations().writes.delete(request.params.teamId, request.params.id, requestActor(request))
    return { success: true as const, message: 'Installation deleted.' }
  })

  app.get('/api/teams/:teamId/mcp/installations/:id/tools', {
    config: { auth: read },
    schema: {
      tags, summary: 'The tools the satellite reported, with their state',
      description: [
        'Every tool the installation\'s instances last reported (each name once), sorted by name; empty until a satellite reports.',
        'Each carries its definition `hash` (lowercase hex SHA-256 of the RFC 8785 canonical JSON of its name, description, input and output schemas and annotations),',
        'its `state` under pinning (`approved`, `held_new`, `held_changed`, or `unpinned` while `pin_tools` is off), whether the satellite leaves it out (`disabled`: held, denied or outside the allow-list),',
        'and `approved`, the definition a team admin approved — for a `held_changed` tool, the old definition beside the new one. Any member of the team may read it.',
        BOUND_TEAM_TEXT,
      ].join(' '),
      params: InstallationParams, response: { 200: ToolsEnvelope },
    },
  }, async (request) => {
    return { success: true as const, data: { tools: await app.services.toolGovernance.tools(request.params.teamId, request.params.id) } }
  })

  app.put('/api/teams/:teamId/mcp/installations/:id/tool-policy', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Set which tools the installation offers',
      description: [
        'Exactly one of `disabled_tools` (a deny-list) or `allowed_tools` (an allow-list), each at most 1 000 names of 1 to 200 characters; setting one clears the other, and `{"disabled_tools": []}` clears both.',
        'Names need not exist yet: a tool that appears later is denied (or, outside an allow-list, refused) at once.',
        'The satellite leaves the refused tools out of `tools/list` and answers `tools/call` for them with a JSON-RPC error; the change reaches it at its next read of what to run and restarts nothing.',
        'Team admins only; audited (`installation.tool_policy_set`).',
      ].join(' '),
      params: InstallationParams, body: ToolPolicyBody, response: { 200: ToolPolicyEnvelope },
    },
  }, async (request) => {
    const policy = await app.services.toolGovernance.setPolicy(request.params.teamId, request.params.id, request.body, requestActor(request))
    return { success: true as const, data: { policy } }
  })

  app.post('/api/teams/:teamId/mcp/installations/:id/tools/approve', {
    config: { auth: manage },
    schema: {
      tags, summary: 'Approve (pin) tool definitions',
      description: [
        'Pins each named tool to the definition with the given hash (1 to 1 000 tools): under `pin_tools`, a tool is offered only while its definition is the approved one;',
        'a tool that is new, or whose definition changed since it was approved, is held (not offered, not callable) until a team admin approves it again.',
        'Each hash must be one a satellite reported for that tool on this installation, else 409 `TOOL_DEFINITION_UNKNOWN` and nothing is approved.',
        'The first approval turns `pin_tools` on. Answers the tools as `GET …/tools` does. Team admins only; audited (`installation.tools_approved`).',
      ].join(' '),
      params: InstallationParams, body: ApproveToolsBody, response: { 200: ToolsEnvelope },
    },
  }, async (request) => {
    const tools = await app.services.toolGovernance.approve(request.params.teamId, request.params.id, request.body.tools, requestActor(request))
    return { success: true as const, data: { tools } }
  })

  app.get('/api/teams/:teamId/mcp/installations/:id/logs', {
    config: { auth: read },
    schema: {
      tags, summary: "The installation's log lines, newest first",
      description: `For the team's admins; a member who is not an admin reads only the lines of their own instance of a per-user installation. Lines come from the satellite's reports, with the instance's secret values masked before they are stored. ${BOUND_TEAM_TEXT}`,
      params: InstallationParams, querystring: ListQuery, response: { 200: LogsEnvelope },
    },
  }, async (request) => {
    const { limit = 20, offset = 0 } = request.query
    const { teamId, id } = request.params
    const caller = userCaller(request)
    const role = caller.role === 'global_admin' ? 'global_admin' : await app.services.teams.roleOf(caller.userId, teamId)
    const admin = role !== null && roleHas(role, 'team.installations.manage')
    const page = await installations().reads.logs(teamId, id, requestActor(request), admin, limit, offset)
    return {
      success: true as const,
      data: {
        logs: page.rows.map((line) => ({ at: line.at.toISOString(), stream: line.stream, text: line.text, user_id: line.userId })),
        pagination: paginate(page.total, limit, offset),
      },
    }
  })

  app.get('/api/users/me/mcp/installations', {
    config: { auth: policy.dual('mcp:read') },
    schema: {
      tags, summary: "The installations of every team of the caller",
      description: `By team, then name; \`team_id\` keeps one team. ${BOUND_MINE_TEXT} ${VIEW_TEXT}`,
      querystring: MyListQuery, response: { 200: InstallationPage },
    },
  }, async (request, reply) => {
    const { limit = 20, offset = 0 } = request.query
    const teamId = teamWithinReach(userCaller(request), request.query.team_id)
    const page = await installations().reads.listMine(requestActor(request), teamId, limit, offset)
    return lists.send(reply, page, () => ({ success: true as const, data: { installations: page.views, pagination: paginate(page.total, limit, offset) } }))
  })

  app.get('/api/users/me/mcp/client-config', {
    config: { auth: policy.dual('mcp:read') },
    schema: {
      tags, summary: 'A client configuration for the caller\'s runnable installations',
      description: [
        'A document for MCP clients with `"<team slug>-<name>": {type: "http", url}` for every installation the caller can use now',
        '(placed on a satellite that has a URL and is online, desired running, and configured for the caller).',
        '`format=mcpServers` (default) answers `{mcpServers: {…}}`, the file Claude Code (`.mcp.json` at a project\'s root) and Cursor (`.cursor/mcp.json`) read;',
        '`format=vscode` answers `{servers: {…}}`, VS Code\'s `.vscode/mcp.json`.',
        'The document comes inside the envelope (`data`); with `download=1` (or `true`) it comes bare, as `application/json` with',
        '`Content-Disposition: attachment` and the file name the client reads (`.mcp.json`, or `mcp.json` for `vscode`).',
        'An offline satellite (stopped with `POST /api/satellites/:id/offline`, or without a heartbeat for 90 s; its installations read `unknown`) serves nothing, so its endpoints are left out until its next heartbeat.',
        'URLs only: clients authorize with their own OAuth tokens, never with credentials from here.',
        BOUND_MINE_TEXT,
      ].join(' '),
      querystring: ClientConfigQuery, response: { 200: ClientConfigAnswer },
    },
  }, async (request, reply) => {
    const { format = 'mcpServers', download } = request.query
    const teamId = teamWithinReach(userCaller(request), request.query.team_id)
    const document = clientConfigDocument(format, await installations().reads.clientConfig(requestActor(request), teamId))
    if (!wantsDownload(download)) return { success: true as const, data: document }
    // The response schema serializes either shape: a bare document matches only its own branch.
    return reply.header('content-disposition', `attachment; filename="${CLIENT_CONFIG_FILE_NAMES[format]}"`).send(document)
  })
}
