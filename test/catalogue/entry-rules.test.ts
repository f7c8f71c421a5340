import { eq } from 'drizzle-orm'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestContext, type TestContext } from '../helpers/app.js'
import { createServer, type ServerBody } from '../helpers/catalogue.js'
import { DIALECTS } from '../helpers/database.js'
import { importDocuments, install, installationOf, installationsOf } from '../helpers/installations.js'
import { client, crew as makeCrew, ROOMY_LIMITS, signUp, type Account, type Call, type Crew } from '../helpers/teams.js'

type Json = Record<string, unknown>

const SCHEMA = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json'
const DIGEST = `sha256:${'a'.repeat(64)}`

/** A package of the catalogue's shape, `npm` unless said otherwise. */
const pkg = (extra: Json = {}): Json => ({ registry_type: 'npm', identifier: '@example/rules-mcp', version: '1.0.0', ...extra })

/** [registry type, version, accepted]: a version must be one of its registry type, never a way to name other code. */
const VERSIONS: Array<[string, string, boolean]> = [
  ['npm', 'file:/srv/evil', false],
  ['npm', 'link:../evil', false],
  ['npm', 'https://evil.example/x.tgz', false],
  ['npm', 'git+https://github.com/evil/x.git', false],
  ['npm', 'github:user/repo', false],
  ['npm', 'user/repo', false],
  ['npm', 'npm:other-package@1', false],
  // A dist-tag is a name its owner points anywhere at any time, not a version.
  ['npm', 'latest', false],
  ['npm', 'next', false],
  ['npm', '^1.2.0', true],
  ['npm', '1.2.3', true],
  ['npm', '>=1.0.0', true],
  ['pypi', '==1.0', true],
  ['pypi', '1.0', true],
  ['pypi', '>=1.2,<2', true],
  ['pypi', '~=1.4.0', true],
  ['pypi', '@file:///srv/evil', false],
  ['pypi', 'file:///srv/evil', false],
  ['pypi', 'https://evil.example/x.whl', false],
  ['pypi', '===anything', false],
  ['docker', '1.2.0', true],
  ['docker', DIGEST, true],
  ['docker', '-v', false],
  ['docker', 'a:b', false],
  ['oci', 'sha256:abc', false],
]

const IDENTIFIERS: Record<string, string> = { npm: '@example/rules-mcp', pypi: 'rules-mcp', docker: 'ghcr.io/example/rules-mcp', oci: 'ghcr.io/example/rules-mcp' }

/** Environment names: those that change how a runtime loads code are refused, in any case. */
const ENV_NAMES: Array<[string, boolean]> = [
  ['NODE_OPTIONS', false], ['node_options', false], ['NODE_PATH', false], ['LD_PRELOAD', false], ['DYLD_INSERT_LIBRARIES', false],
  ['npm_config_registry', false], ['NPM_CONFIG_USERCONFIG', false], ['PYTHONPATH', false], ['UV_INDEX_URL', false],
  ['PIP_INDEX_URL', false], ['DOCKER_HOST', false], ['PATH', false], ['HOME', false], ['GIT_SSH_COMMAND', false],
  ['API_KEY', true], ['NODE_ENV', true], ['DATABASE_URL', true],
]

/** [registry type, runtime_args, accepted on a global server]; a team's server may give none. */
const RUNTIME_ARGS: Array<[string, string[], boolean]> = [
  ['npm', ['-y'], true],
  ['npm', ['--yes', '--quiet', '-q'], true],
  ['npm', ['--node-options=--require=/tmp/x.js'], false],
  ['npm', ['--registry', 'https://evil.example'], false],
  ['npm', ['-p', 'other-package'], false],
  ['pypi', ['--python', '3.12'], true],
  ['pypi', ['--no-progress'], true],
  ['pypi', ['--python', '/usr/bin/evil'], false],
  ['pypi', ['--with', 'evil'], false],
  ['pypi', ['--index-url', 'https://evil.example/simple'], false],
  ['docker', ['-v', '/:/host'], false],
  ['docker', ['--privileged'], false],
]

/**
 * What a catalogue entry may make a satellite do: nothing beyond running the named package. The
 * rules hold on every route that stores packages (global and team servers, their versions), by
 * the visibility of the server, and on the registry import; each refusal is 400 VALIDATION_ERROR
 * naming the member at fault, and nothing is written.
 */
describe.each(DIALECTS)('catalogue entry rules on %s', (dialect) => {
  let ctx: TestContext
  let app: FastifyInstance
  let call: Call
  let admin: Account
  let a: Crew
  let seq = 0
  const fresh = () => signUp(app, `rules_${++seq}`)
  const slug = () => `rules-${dialect}-${++seq}`

  const teamServers = () => `/api/teams/${a.team.id}/mcp/servers`
  let globalServer: ServerBody
  let teamServer: ServerBody

  const expectRefused = (response: LightMyRequestResponse, field: string) => {
    expect(response.statusCode, response.body).toBe(400)
    const body = response.json()
    expect(body).toMatchObject({ success: false, code: 'VALIDATION_ERROR' })
    expect(body.details.map((detail: { field: string }) => detail.field)).toContain(field)
  }
  const read = async (id: string): Promise<ServerBody> => (await call('GET', `/api/mcp/servers/${id}`, admin)).json().data.server
  const versionCount = async (id: string): Promise<number> => (await call('GET', `/api/mcp/servers/${id}/versions`, admin)).json().data.pagination.total

  /** Everything the routes below could write to. */
  const state = async () => ({
    global: await read(globalServer.id), team: await read(teamServer.id),
    globalVersions: await versionCount(globalServer.id), teamVersions: await versionCount(teamServer.id),
  })

  /**
   * Every route that stores packages, with `packages`: each refused naming the field (and nothing
   * written), or each accepted. The rule may differ on a team's server (`team`).
   */
  async function throughEveryRoute(packages: Json[], fields: { global: string; team: string }, accepted: { global: boolean; team: boolean }): Promise<void> {
    let last = ''
    const gone = async () => expect((await call('GET', `/api/mcp/servers/${last}`, admin)).statusCode).toBe(404)
    const routes: Array<{ name: string; team: boolean; send: () => Promise<LightMyRequestResponse>; created?: () => Promise<void> }> = [
      { name: 'POST global server', team: false, send: () => call('POST', '/api/mcp/servers/global', admin, { name: 'Rules', slug: (last = slug()), packages }), created: gone },
      { name: 'PUT global server', team: false, send: () => call('PUT', `/api/mcp/servers/global/${globalServer.id}`, admin, { packages }) },
      { name: 'POST version (catalogue route)', team: false, send: () => call('POST', `/api/mcp/servers/${globalServer.id}/versions`, admin, { version: `1.0.${++seq}`, packages }) },
      { name: 'POST team server', team: true, send: () => call('POST', teamServers(), a.teamAdmin, { name: 'Rules', slug: (last = slug()), packages }), created: gone },
      { name: 'PUT team server', team: true, send: () => call('PUT', `${teamServers()}/${teamServer.id}`, a.teamAdmin, { packages }) },
      { name: 'POST team version', team: true, send: () => call('POST', `${teamServers()}/${teamServer.id}/versions`, a.teamAdmin, { version: `1.0.${++seq}`, packages }) },
      // A global admin adding a version to a team's server through the catalogue's route: the server's visibility decides.
      { name: "POST version of a team's server (catalogue route)", team: true, send: () => call('POST', `/api/mcp/servers/${teamServer.id}/versions`, admin, { version: `1.0.${++seq}`, packages }) },
    ]
    for (const route of routes) {
      const before = await state()
      const response = await route.send()
      if (route.team ? accepted.team : accepted.global) {
        expect([200, 201], `${route.name}: ${response.body}`).toContain(response.statusCode)
        // An accepted server edit is put back, so that the next case starts from an empty entry.
        if (route.name === 'PUT global server') await call('PUT', `/api/mcp/servers/global/${globalServer.id}`, admin, { packages: [] })
        if (route.name === 'PUT team server') await call('PUT', `${teamServers()}/${teamServer.id}`, a.teamAdmin, { packages: [] })
        continue
      }
      expect(response.statusCode, `${route.name}: ${response.body}`).toBe(400)
      expectRefused(response, route.team ? fields.team : fields.global)
      expect(await state(), route.name).toEqual(before)
      await route.created?.()
    }
  }

  beforeAll(async () => {
    ctx = await createTestContext(dialect)
    app = (await ctx.build({ limits: ROOMY_LIMITS })).app
    call = client(app)
    admin = await signUp(app, 'rules_admin')
    a = await makeCrew(call, fresh, 'Rules Team')
    globalServer = await createServer(call, admin, { name: 'Rules Global', slug: `rules-global-${dialect}` })
    const created = await call('POST', teamServers(), a.teamAdmin, { name: 'Rules Team Server', slug: `rules-team-${dialect}` })
    expect(created.statusCode, created.body).toBe(201)
    teamServer = created.json().data.server
  })
  afterAll(() => ctx.close())

  it.each(VERSIONS)('%s version %j: accepted %s, on every route', async (registryType, version, accepted) => {
    const field = 'packages[0].version'
    await throughEveryRoute([pkg({ registry_type: registryType, identifier: IDENTIFIERS[registryType], version })], { global: field, team: field }, { global: accepted, team: accepted })
  })

  it.each(ENV_NAMES)('environment variable %s: accepted %s, on every route', async (name, accepted) => {
    const field = 'packages[0].environment_variables[1].name'
    await throughEveryRoute([pkg({ environment_variables: [{ name: 'FIRST' }, { name }] })], { global: field, team: field }, { global: accepted, team: accepted })
  })

  it.each(RUNTIME_ARGS)('%s runtime_args %j: on a global server accepted %s, on a team server refused', async (registryType, args, accepted) => {
    // The word refused: the value after --python, else the option itself; a team's server, the first.
    const global = `packages[1].runtime_args[${args[0] === '--python' ? 1 : 0}]`
    const packages = [pkg(), pkg({ registry_type: registryType, identifier: IDENTIFIERS[registryType], version: registryType === 'pypi' ? '1.0' : '1.0.0', runtime_args: args })]
    await throughEveryRoute(packages, { global, team: 'packages[1].runtime_args[0]' }, { global: accepted, team: false })
  })

  it('every problem of a body is named at once', async () => {
    const response = await call('POST', '/api/mcp/servers/global', admin, {
      name: 'Many', packages: [pkg({ version: 'file:/x', environment_variables: [{ name: 'LD_PRELOAD' }] }), pkg({ registry_type: 'pypi', identifier: 'ok', version: '@x' })],
    })
    expectRefused(response, 'packages[0].version')
    expect(response.json().details.map((detail: { field: string }) => detail.field)).toEqual(['packages[0].version', 'packages[0].environment_variables[0].name', 'packages[1].version'])
  })

  describe('the registry import', () => {
    /** A document with one package (changed by `change`) and a remote, imported; answers the result and the server. */
    const importOne = async (change: Json): Promise<{ result: Json; server: ServerBody }> => {
      const name = `io.github.rules-${dialect}/r${++seq}`
      const document = {
        $schema: SCHEMA, name, description: 'Rules.', version: '1.0.0',
        packages: [{ registryType: 'npm', identifier: '@example/rules-mcp', version: '1.0.0', transport: { type: 'stdio' }, ...change }],
        remotes: [{ type: 'streamable-http', url: 'https://rules.example.com/mcp' }],
      }
      const response = await call('POST', '/api/mcp/servers/import', admin, document)
      expect(response.statusCode, response.body).toBe(200)
      const result = response.json().data.results[0]
      return { result, server: await read(result.server_id) }
    }

    it.each([
      [{ version: 'file:/srv/evil' }, 'packages[0].version'],
      [{ version: 'github:user/repo' }, 'packages[0].version'],
      [{ environmentVariables: [{ name: 'NODE_OPTIONS', value: '--require=/tmp/x.js' }] }, 'packages[0].environmentVariables[0].name'],
      [{ environmentVariables: [{ name: 'API_KEY' }, { name: 'pythonpath' }] }, 'packages[0].environmentVariables[1].name'],
      [{ runtimeArguments: [{ type: 'named', name: '--node-options', value: '--require=/tmp/x.js' }] }, 'packages[0].runtimeArguments[0]'],
      // A runner option filled in by whoever installs it is a word they choose before the package.
      [{ runtimeArguments: [{ type: 'positional', valueHint: 'anything' }] }, 'packages[0].runtimeArguments[0]'],
      [{ registryType: 'oci', identifier: 'ghcr.io/example/rules', version: '1.0.0', runtimeArguments: [{ type: 'positional', value: '--privileged' }] }, 'packages[0].runtimeArguments[0]'],
    ])('a package with %j is left out of the catalogue with a warning naming %s; the rest of the document is imported', async (change, field) => {
      const { result, server } = await importOne(change)
      expect(result.status).toBe('created')
      expect((result.warnings as Array<{ field: string }>).map((warning) => warning.field)).toContain(field)
      expect(server.packages).toEqual([])
      expect(server.remotes).toEqual([{ type: 'streamable-http', url: 'https://rules.example.com/mcp' }])
      // The stored document keeps it (the export gives it back as published), but nobody can install it.
      const refused = await call('POST', installationsOf(a.team.id), a.teamAdmin, { server_id: server.id, target: { kind: 'package', index: 0 } })
      expectRefused(refused, 'target')
      const remote = await call('POST', installationsOf(a.team.id), a.teamAdmin, { server_id: server.id, target: { kind: 'remote', index: 0 } })
      expect(remote.statusCode, remote.body).toBe(201)
    })

    it('harmless runner options are catalogued; the package\'s own arguments are its business, whatever they are called', async () => {
      const { result, server } = await importOne({
        runtimeArguments: [{ type: 'positional', value: '-y' }],
        packageArguments: [{ type: 'named', name: '--node-options', value: '--max-old-space-size=512' }],
      })
      expect(result.warnings).toBeUndefined()
      expect(server.packages).toMatchObject([{ registry_type: 'npm', runtime_args: ['-y'] }])
      const installation = await install(call, a.team.id, a.teamAdmin, { server_id: server.id })
      expect(installation.target).toMatchObject({ kind: 'package', index: 0 })
    })
  })

  describe('values', () => {
    it('an input of a loader-changing variable (an entry from before the rules) takes no value; unsetting it is allowed', async () => {
      const [serverId] = await importDocuments(call, admin, [{
        $schema: SCHEMA, name: `io.github.rules-${dialect}/values`, description: 'Values.', version: '1.0.0',
        packages: [{ registryType: 'npm', identifier: '@example/values-mcp', version: '1.0.0', transport: { type: 'stdio' }, environmentVariables: [{ name: 'API_KEY' }] }],
      }])
      const installation = await install(call, a.team.id, a.teamAdmin, { server_id: serverId })
      // What an installation derived before the rules holds: an input nobody may fill any more.
      const { db, t } = app.services.database
      const inputs = [...installation.inputs.map(({ is_set: _set, ...input }) => input), { key: 'env:NODE_OPTIONS', kind: 'env', description: '', required: false, secret: false, scope: 'team' }]
      await db.update(t.mcpInstallations).set({ inputs: inputs as never }).where(eq(t.mcpInstallations.id, installation.id))
      const before = (await call('GET', installationOf(a.team.id, installation.id), a.teamAdmin)).json().data.installation
      const refused = await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'env:API_KEY': 'fine', 'env:NODE_OPTIONS': '--require=/tmp/x.js' } })
      expectRefused(refused, 'values.env:NODE_OPTIONS')
      // All or nothing: the valid value beside it was not written either.
      expect((await call('GET', installationOf(a.team.id, installation.id), a.teamAdmin)).json().data.installation).toEqual(before)
      const unset = await call('PUT', `${installationOf(a.team.id, installation.id)}/values`, a.teamAdmin, { values: { 'env:NODE_OPTIONS': null } })
      expect(unset.statusCode, unset.body).toBe(200)
    })
  })
})
