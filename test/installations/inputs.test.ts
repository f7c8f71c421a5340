import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { ServerPackage, ServerRemote } from '../../src/formats/catalogue-entries.js'
import {
  defaultTargetOf,
  deriveInputs,
  inputSourceOf,
  targetsOf,
  unknownInputKeys,
  type Derivation,
  type InputSource,
  type InstallationInput,
} from '../../src/modules/installations/inputs.js'
import { checkValue } from '../../src/modules/installations/values.js'
import { readServerJson, type ServerJson } from '../../src/modules/registry/server-json.js'

/**
 * The inputs a team sets when it installs one package or remote of a catalogue version, derived
 * from the version's `server.json` (or, for a version made by hand, from the catalogue's own
 * packages and remotes), and the check of a value against an input's choices and format. Pure
 * functions: no database, no HTTP.
 */

type Json = Record<string, unknown>

/** A document read as an import reads it: checked against the format and stored in its canonical form. */
function stored(document: Json): ServerJson {
  const read = readServerJson({ document })
  if (!read.ok) throw new Error(`fixture refused: ${JSON.stringify(read.problems)}`)
  return read.document
}

const fromDocument = (document: ServerJson): InputSource =>
  inputSourceOf({ serverJson: document as unknown as Json, packages: null, remotes: null })

function inputsOf(derivation: Derivation): InstallationInput[] {
  if (!derivation.ok) throw new Error(`refused: ${derivation.reason}`)
  return derivation.inputs
}

/**
 * Two packages and a remote, with one entry of each kind of input: secret, required, defaulted and
 * choice-restricted environment variables, a value template with variables, a fixed value, named
 * and positional arguments, transport and remote headers, URL template variables.
 */
const WEATHER = stored({
  $schema: 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json',
  name: 'io.github.example/weather',
  description: 'Forecasts and alerts.',
  version: '1.4.0',
  packages: [
    {
      registryType: 'npm',
      identifier: '@example/weather-mcp',
      version: '1.4.0',
      runtimeHint: 'npx',
      transport: {
        type: 'streamable-http',
        url: 'http://localhost:{port}/mcp/{workspace}',
        headers: [
          { name: 'Authorization', value: 'Bearer {token}', isSecret: true, variables: { token: { description: 'Weather API token', isRequired: true } } },
        ],
      },
      runtimeArguments: [
        { type: 'named', name: '--max-old-space-size', value: '256' },
      ],
      packageArguments: [
        { type: 'named', name: '--port', valueHint: 'port', description: 'Port to listen on', format: 'number', default: '8080' },
        { type: 'positional', valueHint: 'data_dir', description: 'Where forecasts are cached', format: 'filepath', isRequired: true },
        { type: 'positional', value: 'serve' },
      ],
      environmentVariables: [
        { name: 'WEATHER_API_KEY', description: 'Key of the weather provider', isRequired: true, isSecret: true },
        { name: 'LOG_LEVEL', description: 'How much to log', default: 'info', choices: ['debug', 'info', 'warn'] },
        { name: 'REGION', value: 'eu-west' },
        { name: 'PROXY_URL', value: 'http://{proxy_host}:{proxy_port}', isRequired: true, variables: {
          proxy_host: { description: 'Proxy host name' },
          proxy_port: { description: 'Proxy port', format: 'number', default: '3128' },
        } },
      ],
    },
    {
      registryType: 'pypi',
      identifier: 'weather-mcp',
      version: '1.4.0',
      transport: { type: 'stdio' },
      environmentVariables: [{ name: 'WEATHER_DEBUG', format: 'boolean', default: 'false' }],
    },
  ],
  remotes: [
    {
      type: 'streamable-http',
      url: 'https://{tenant}.weather.example.com/mcp',
      variables: { tenant: { description: 'Your tenant', isRequired: true, choices: ['acme', 'globex'] } },
      headers: [
        { name: 'X-Api-Key', description: 'Your API key', isRequired: true, isSecret: true },
        { name: 'X-Client', value: 'catalogue' },
      ],
    },
  ],
})

describe('deriveInputs: a server.json document with several packages and a remote', () => {
  const source = fromDocument(WEATHER)

  it('lists the targets, packages first, and picks the first package by default', () => {
    expect(targetsOf(source)).toEqual([{ kind: 'package', index: 0 }, { kind: 'package', index: 1 }, { kind: 'remote', index: 0 }])
    expect(defaultTargetOf(source)).toEqual({ kind: 'package', index: 0 })
    expect(deriveInputs(source)).toEqual(deriveInputs(source, { target: { kind: 'package', index: 0 } }))
  })

  it('the first package: environment variables, arguments, the transport header and URL, fixed values left out', () => {
    const derivation = deriveInputs(source)
    expect(derivation.ok && derivation.target).toEqual({ kind: 'package', index: 0 })
    expect(inputsOf(derivation)).toEqual([
      { key: 'env:WEATHER_API_KEY', kind: 'env', description: 'Key of the weather provider', required: true, secret: true, scope: 'team' },
      { key: 'env:LOG_LEVEL', kind: 'env', description: 'How much to log', required: false, secret: false, default: 'info', choices: ['debug', 'info', 'warn'], scope: 'team' },
      // REGION has a fixed value: the publisher's, not listed. PROXY_URL is a template: its variables are asked for.
      // proxy_host has no default and the variable's entry is required, so it is required too.
      { key: 'env:PROXY_URL{proxy_host}', kind: 'env', description: 'Proxy host name', required: true, secret: false, scope: 'team' },
      { key: 'env:PROXY_URL{proxy_port}', kind: 'env', description: 'Proxy port', required: false, secret: false, default: '3128', format: 'number', scope: 'team' },
      // --max-old-space-size and the positional `serve` are fixed.
      { key: 'arg:--port', kind: 'arg', description: 'Port to listen on', required: false, secret: false, default: '8080', format: 'number', scope: 'team' },
      { key: 'arg:data_dir', kind: 'arg', description: 'Where forecasts are cached', required: true, secret: false, format: 'filepath', scope: 'team' },
      // Part of a secret header: secret.
      { key: 'header:Authorization{token}', kind: 'header', description: 'Weather API token', required: true, secret: true, scope: 'team' },
      // {port} is filled in from the --port argument; {workspace} names nothing of the package, so it is asked for.
      { key: 'urlvar:workspace', kind: 'urlvar', description: '', required: true, secret: false, scope: 'team' },
    ])
  })

  it('the second package: its one environment variable with its format', () => {
    expect(inputsOf(deriveInputs(source, { target: { kind: 'package', index: 1 } }))).toEqual([
      { key: 'env:WEATHER_DEBUG', kind: 'env', description: '', required: false, secret: false, default: 'false', format: 'boolean', scope: 'team' },
    ])
  })

  it('the remote: its URL variable and its configurable header, the fixed header left out', () => {
    expect(inputsOf(deriveInputs(source, { target: { kind: 'remote', index: 0 } }))).toEqual([
      { key: 'header:X-Api-Key', kind: 'header', description: 'Your API key', required: true, secret: true, scope: 'team' },
      { key: 'urlvar:tenant', kind: 'urlvar', description: 'Your tenant', required: true, secret: false, choices: ['acme', 'globex'], scope: 'team' },
    ])
  })

  it('refuses a target the version does not have, with a reason', () => {
    expect(deriveInputs(source, { target: { kind: 'package', index: 2 } })).toEqual({
      ok: false, target: { kind: 'package', index: 2 }, reason: 'This version has 2 packages, so there is no packages[2] to install.',
    })
    expect(deriveInputs(source, { target: { kind: 'remote', index: 1 } })).toEqual({
      ok: false, target: { kind: 'remote', index: 1 }, reason: 'This version has 1 remote, so there is no remotes[1] to install.',
    })
    expect(deriveInputs(source, { target: { kind: 'remote', index: -1 } }).ok).toBe(false)
    expect(deriveInputs(source, { target: { kind: 'remote', index: 0.5 } }).ok).toBe(false)
  })
})

describe('deriveInputs: the edges of the rules', () => {
  const document = (extra: Json) => fromDocument(stored({ name: 'io.github.example/edge', description: 'Edge cases.', version: '1.0.0', ...extra }))
  const npm = (extra: Json) => ({ registryType: 'npm', identifier: 'edge', transport: { type: 'stdio' }, ...extra })

  it('without a package the first remote is the default target; without either nothing can be installed', () => {
    const remoteOnly = document({ remotes: [{ type: 'sse', url: 'https://edge.example.com/sse' }] })
    expect(defaultTargetOf(remoteOnly)).toEqual({ kind: 'remote', index: 0 })
    expect(deriveInputs(remoteOnly)).toEqual({ ok: true, target: { kind: 'remote', index: 0 }, inputs: [] })
    expect(deriveInputs(document({}))).toEqual({ ok: false, target: null, reason: 'This version has neither a package nor a remote, so there is nothing to install.' })
  })

  it('refuses a package whose two environment variables have one name, naming both', () => {
    const source = document({ packages: [npm({ environmentVariables: [{ name: 'TOKEN' }, { name: 'OTHER', value: 'x' }, { name: 'TOKEN', isSecret: true }] })] })
    const derivation = deriveInputs(source)
    expect(derivation.ok).toBe(false)
    expect(!derivation.ok && derivation.reason).toBe(
      'packages[0].environmentVariables[0] and packages[0].environmentVariables[2] both give the input "env:TOKEN"; ' +
      'one value cannot be meant for both, so this target cannot be installed (another package or remote of the version may be).')
  })

  it('refuses a remote with two headers differing only in case (one HTTP header), and a runtime and package argument of one name', () => {
    const remote = document({ remotes: [{ type: 'sse', url: 'https://edge.example.com/sse', headers: [{ name: 'X-Key' }, { name: 'x-key' }] }] })
    const refused = deriveInputs(remote)
    expect(!refused.ok && refused.reason).toMatch(/^remotes\[0\]\.headers\[0\] and remotes\[0\]\.headers\[1\] both give the input "header:x-key"/)
    const twice = document({ packages: [npm({ runtimeArguments: [{ type: 'named', name: '-v' }], packageArguments: [{ type: 'named', name: '-v' }] })] })
    const again = deriveInputs(twice)
    expect(!again.ok && again.reason).toMatch(/^packages\[0\]\.runtimeArguments\[0\] and packages\[0\]\.packageArguments\[0\] both give the input "arg:-v"/)
  })

  it('the same variable twice in one template is one input; a template segment the variables do not declare stays as written', () => {
    const source = document({ packages: [npm({ environmentVariables: [
      { name: 'PAIR', value: '{a}:{a}:{undeclared}:{constructor}:{__proto__}', variables: { a: { isSecret: true } } },
      { name: 'LITERAL', value: '{"json": true}' },
    ] })] })
    expect(inputsOf(deriveInputs(source))).toEqual([
      { key: 'env:PAIR{a}', kind: 'env', description: '', required: false, secret: true, scope: 'team' },
    ])
  })

  it('a docker-style runtime argument template: each variable is its own input, a fixed variable is not', () => {
    const source = document({ packages: [{
      registryType: 'oci', identifier: 'ghcr.io/example/edge:1.0.0', transport: { type: 'stdio' }, runtimeHint: 'docker',
      runtimeArguments: [
        { type: 'named', name: '--mount', value: 'type=bind,src={source},dst={target}', variables: {
          source: { description: 'Folder on the host', format: 'filepath', isRequired: true },
          target: { value: '/data' },
        } },
        { type: 'positional', value: '{image_tag}', variables: { image_tag: { default: 'latest' } } },
      ],
    }] })
    expect(inputsOf(deriveInputs(source))).toEqual([
      { key: 'arg:--mount{source}', kind: 'arg', description: 'Folder on the host', required: true, secret: false, format: 'filepath', scope: 'team' },
      { key: 'arg:{image_tag}', kind: 'arg', description: '', required: false, secret: false, default: 'latest', scope: 'team' },
    ])
  })

  it('every URL segment is an input, declared or not, except one the remote fixes; a defaulted one is optional', () => {
    const source = document({ remotes: [{
      type: 'streamable-http',
      url: 'https://{region}.example.com/{tenant}/{version}/{constructor}?key=<YOUR_TOKEN>',
      variables: { region: { default: 'eu' }, version: { value: 'v2' } },
    }] })
    expect(inputsOf(deriveInputs(source)).map(({ key, required, default: given }) => ({ key, required, default: given }))).toEqual([
      { key: 'urlvar:region', required: false, default: 'eu' },
      { key: 'urlvar:tenant', required: true, default: undefined },
      { key: 'urlvar:constructor', required: true, default: undefined },
    ])
  })

  it('a package transport URL segment naming an environment variable or an argument is filled in from it', () => {
    const source = document({ packages: [npm({
      transport: { type: 'sse', url: 'http://{HOST}:{listen_port}/{mode}/sse' },
      environmentVariables: [{ name: 'HOST', default: '127.0.0.1' }],
      packageArguments: [
        { type: 'positional', valueHint: 'listen_port', format: 'number' },
        // No valueHint: `{mode}` names the flag without its dashes.
        { type: 'named', name: '--mode', choices: ['fast', 'safe'] },
      ],
    })] })
    expect(inputsOf(deriveInputs(source)).map((input) => input.key)).toEqual(['env:HOST', 'arg:listen_port', 'arg:--mode'])
  })
})

describe('deriveInputs: a version made by hand (the catalogue\'s packages and remotes)', () => {
  const packages = [{
    registry_type: 'npm', identifier: '@example/notes', version: '2.0.0', runtime_args: ['--stdio', '{notes_dir}'],
    environment_variables: [
      { name: 'NOTES_TOKEN', description: 'Access token', required: true, secret: true },
      { name: 'NOTES_THEME', description: '', required: false, secret: false, default: 'dark' },
    ],
  }] as ServerPackage[]
  const remotes = [{
    type: 'sse', url: 'https://notes.example.com/{space}/sse',
    headers: [{ name: 'Authorization', value: 'Bearer {key}', variables: { key: { isSecret: true, isRequired: true } } }],
    variables: { space: { description: 'Your space' } },
  }] as ServerRemote[]
  const source = inputSourceOf({ serverJson: null, packages, remotes })

  it('takes the catalogue entry when the version has no document; runtime arguments are fixed words', () => {
    expect(source.from).toBe('catalogue')
    expect(targetsOf(source)).toEqual([{ kind: 'package', index: 0 }, { kind: 'remote', index: 0 }])
    expect(inputsOf(deriveInputs(source))).toEqual([
      { key: 'env:NOTES_TOKEN', kind: 'env', description: 'Access token', required: true, secret: true, scope: 'team' },
      { key: 'env:NOTES_THEME', kind: 'env', description: '', required: false, secret: false, default: 'dark', scope: 'team' },
    ])
    expect(inputsOf(deriveInputs(source, { target: { kind: 'remote', index: 0 } }))).toEqual([
      { key: 'header:Authorization{key}', kind: 'header', description: '', required: true, secret: true, scope: 'team' },
      { key: 'urlvar:space', kind: 'urlvar', description: 'Your space', required: true, secret: false, scope: 'team' },
    ])
  })

  it('names a duplicate by the catalogue\'s own spelling', () => {
    const twice = inputSourceOf({ serverJson: null, packages: [{ ...packages[0]!, environment_variables: [{ name: 'A' }, { name: 'A' }] } as ServerPackage], remotes: null })
    const derivation = deriveInputs(twice)
    expect(!derivation.ok && derivation.reason).toMatch(/^packages\[0\]\.environment_variables\[0\] and packages\[0\]\.environment_variables\[1\] both give the input "env:A"/)
  })
})

describe('deriveInputs: every server of the MCP Registry seed of May 2025', () => {
  const seed: unknown[] = JSON.parse(readFileSync(new URL('../fixtures/registry/registry-seed-2025-05-16.json', import.meta.url), 'utf8'))
  const entries = seed.filter((item): item is Json => typeof item === 'object' && item !== null && (item as Json).name !== '')

  it('derives every target of every server, keys unique, as an import stores the document', () => {
    let targets = 0
    let refused = 0
    const kinds = new Map<string, number>()
    for (const entry of entries) {
      const source = fromDocument(stored(entry))
      for (const target of targetsOf(source)) {
        targets += 1
        const derivation = deriveInputs(source, { target })
        if (!derivation.ok) {
          refused += 1
          continue
        }
        const keys = derivation.inputs.map((input) => input.key)
        expect(new Set(keys).size, `${String(entry.name)} ${JSON.stringify(target)}`).toBe(keys.length)
        for (const input of derivation.inputs) kinds.set(input.kind, (kinds.get(input.kind) ?? 0) + 1)
      }
    }
    // 464 servers, each with one package; 8 of them also with remotes (9 in all).
    expect(entries).toHaveLength(464)
    expect(targets).toBe(473)
    expect(refused).toBe(0)
    // The seed's 400 environment variables are all configurable; its 449 arguments all carry a fixed
    // value and its remote URLs no `{…}` segment (`?key=<YOUR_TOKEN>` is a placeholder for people, not a template).
    expect(Object.fromEntries(kinds)).toEqual({ env: 400 })
  })
})

describe('checkValue', () => {
  const input = (extra: Partial<InstallationInput>): InstallationInput =>
    ({ key: 'env:X', kind: 'env', description: '', required: false, secret: false, scope: 'team', ...extra })

  it('number: a decimal number, as JSON writes one', () => {
    const number = input({ key: 'arg:--port', format: 'number' })
    for (const good of ['8080', '0', '-3', '0.5', '-12.75', '1e3', '2.5E-4']) expect(checkValue(number, good), good).toBeNull()
    for (const bad of ['', ' 42', '42 ', '12abc', '0x10', '08', '.5', '5.', '+1', 'NaN', 'Infinity', '1,000']) {
      expect(checkValue(number, bad), bad).toEqual({ key: 'arg:--port', message: `arg:--port must be a decimal number such as 8080 or 0.5; ${JSON.stringify(bad)} is not.` })
    }
  })

  it('boolean: true or false, in lower case', () => {
    const flag = input({ format: 'boolean' })
    expect(checkValue(flag, 'true')).toBeNull()
    expect(checkValue(flag, 'false')).toBeNull()
    for (const bad of ['True', 'FALSE', '1', '0', 'yes', '']) {
      expect(checkValue(flag, bad)?.message, bad).toBe(`env:X must be true or false (in lower case); ${JSON.stringify(bad)} is neither.`)
    }
  })

  it('filepath: any path on the machine that runs the server, without control characters', () => {
    const path = input({ format: 'filepath' })
    for (const good of ['/srv/data', 'relative/notes', 'C:\\Users\\me\\notes', '~/space in name', '']) expect(checkValue(path, good), good).toBeNull()
    for (const bad of ['/srv/\u0000data', '/srv/a\nb', 'tab\there']) {
      expect(checkValue(path, bad)?.message).toBe('env:X must be a file path without control characters (no NUL, tab or line break).')
    }
    expect(checkValue(path, `/${'a'.repeat(4096)}`)?.message).toBe('env:X must be a file path of at most 4096 characters.')
  })

  it('string, or no format: any text; a required input not the empty string', () => {
    for (const format of ['string', undefined] as const) {
      for (const value of ['', 'anything', '{"json": 1}', ' spaced ', 'ünïcödé']) expect(checkValue(input({ format }), value)).toBeNull()
    }
    expect(checkValue(input({ required: true }), '')).toEqual({ key: 'env:X', message: 'env:X is required and must not be empty.' })
    expect(checkValue(input({ required: true, format: 'number' }), '')?.message).toBe('env:X is required and must not be empty.')
  })

  it('choices: exactly one of them, whatever the format', () => {
    const level = input({ key: 'env:LOG_LEVEL', choices: ['debug', 'info', 'warn'] })
    expect(checkValue(level, 'info')).toBeNull()
    expect(checkValue(level, 'INFO')).toEqual({ key: 'env:LOG_LEVEL', message: 'env:LOG_LEVEL must be one of "debug", "info", "warn"; "INFO" is not one of them.' })
    expect(checkValue(level, '')?.message).toBe('env:LOG_LEVEL must be one of "debug", "info", "warn"; "" is not one of them.')
    expect(checkValue(input({ choices: ['1', '2'], format: 'number' }), '2')).toBeNull()
  })

  it('a value that is not text', () => {
    for (const bad of [42, true, null, undefined, ['a'], { a: 1 }]) {
      expect(checkValue(input({ format: 'number' }), bad)?.message).toBe('env:X must be given as text (a JSON string), whatever its format.')
    }
  })

  it('every default of the sample document passes its own input', () => {
    for (const target of targetsOf(fromDocument(WEATHER))) {
      for (const each of inputsOf(deriveInputs(fromDocument(WEATHER), { target }))) {
        if (each.default !== undefined) expect(checkValue(each, each.default), each.key).toBeNull()
      }
    }
  })
})

describe('user-scoped keys', () => {
  const source = fromDocument(WEATHER)

  it('turns the chosen keys to the user scope, the rest stay with the team', () => {
    const inputs = inputsOf(deriveInputs(source, { userScopedKeys: ['env:WEATHER_API_KEY', 'header:Authorization{token}', 'urlvar:tenant'] }))
    expect(inputs.filter((input) => input.scope === 'user').map((input) => input.key)).toEqual(['env:WEATHER_API_KEY', 'header:Authorization{token}'])
    expect(inputs.filter((input) => input.scope === 'team')).toHaveLength(6)
    const remote = inputsOf(deriveInputs(source, { target: { kind: 'remote', index: 0 }, userScopedKeys: ['env:WEATHER_API_KEY', 'urlvar:tenant'] }))
    expect(remote.map((input) => [input.key, input.scope])).toEqual([['header:X-Api-Key', 'team'], ['urlvar:tenant', 'user']])
  })

  it('keys match exactly; those naming no input of the target are reported', () => {
    const inputs = inputsOf(deriveInputs(source, { userScopedKeys: ['ENV:weather_api_key', 'header:authorization{token}'] }))
    expect(inputs.every((input) => input.scope === 'team')).toBe(true)
    expect(unknownInputKeys(inputs, ['env:LOG_LEVEL', 'ENV:weather_api_key', 'urlvar:tenant', 'urlvar:tenant', 'env:REGION'])).toEqual(['ENV:weather_api_key', 'urlvar:tenant', 'env:REGION'])
  })
})
