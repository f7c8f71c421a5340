/**
 * The backend and the reference satellite keep their own copies of what a catalogue entry may
 * make a satellite run (the satellite is a separate package and must not import the backend).
 * The backend's copy decides what is stored; the satellite's is the last line when an entry got
 * through anyway. They must agree: every environment name and runner option one refuses the other
 * refuses, and nothing the backend lets through is refused at the satellite (a satellite stricter
 * than its backend would fail installations the backend accepted).
 */
import { describe, expect, it } from 'vitest'
import * as satellite from '../../examples/satellite/src/runtime-rules.js'
import * as backend from '../../src/formats/runtime-rules.js'

const ENV_NAMES = [
  'NODE_OPTIONS', 'node_options', 'NODE_PATH', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'DYLD_INSERT_LIBRARIES', 'PATH', 'HOME',
  'npm_config_registry', 'NPM_CONFIG_PREFIX', 'PYTHONPATH', 'PYTHONSTARTUP', 'UV_INDEX_URL', 'PIP_INDEX_URL', 'DOCKER_HOST',
  'GIT_SSH_COMMAND', 'BASH_ENV', 'JAVA_TOOL_OPTIONS', 'XDG_CONFIG_HOME', 'TMPDIR',
  'API_KEY', 'GITHUB_PERSONAL_ACCESS_TOKEN', 'NODE_ENV', 'PATHS', 'MY_HOME', 'LOG_LEVEL',
]

const VERSIONS: Array<[type: 'npm' | 'pypi' | 'docker' | 'oci', version: string]> = [
  ['npm', '1.2.3'], ['npm', '^1.2.0'], ['npm', '>=1 <2'], ['npm', '1.0.0-beta.1'],
  ['npm', 'file:/folder'], ['npm', 'link:../x'], ['npm', 'https://evil.example/x.tgz'], ['npm', 'git+https://github.com/a/b.git'],
  ['npm', 'github:user/repo'], ['npm', 'user/repo'], ['npm', 'npm:other@1.0.0'],
  ['pypi', '1.0'], ['pypi', '==1.0.2'], ['pypi', '>=1.0,<2'], ['pypi', '@ file:///x'], ['pypi', 'https://evil.example/x.whl'], ['pypi', '===anything'],
  ['docker', '1.4.0'], ['docker', `sha256:${'a'.repeat(64)}`], ['docker', '../x'], ['oci', 'latest'], ['oci', '--privileged'],
]

const RUNTIME_ARGS: Array<[type: 'npm' | 'pypi' | 'docker', args: string[]]> = [
  ['npm', ['-y']], ['npm', ['--yes', '--quiet']], ['npm', ['--node-options=--require=/tmp/x.js']], ['npm', ['--prefix', '/tmp']], ['npm', ['-p', 'other']],
  ['pypi', ['--quiet']], ['pypi', ['--python', '3.12']], ['pypi', ['--with', 'evil']], ['pypi', ['--index-url', 'https://evil.example']],
  ['docker', ['--privileged']], ['docker', ['-v', '/:/host']],
]

describe('the backend and the satellite agree on what an entry may make a satellite run', () => {
  it('keep the same list of loader-changing environment names', () => {
    expect(satellite.LOADER_ENV.source).toBe(backend.LOADER_CHANGING_ENV.source)
    expect(satellite.LOADER_ENV.flags).toBe(backend.LOADER_CHANGING_ENV.flags)
    for (const name of ENV_NAMES) {
      expect(satellite.envNameProblem(name) !== undefined, name).toBe(backend.envNameProblem(name) !== null)
    }
  })

  it.each(VERSIONS)('a %s version %j the backend accepts is run by the satellite; one both refuse stays refused', (type, version) => {
    const backendRefuses = backend.versionProblem(type, version) !== null
    const satelliteRefuses = satellite.versionProblem(type, version) !== undefined
    if (!backendRefuses) expect(satelliteRefuses).toBe(false)
    // What the satellite runs it never reads as a path, a URL, a git spec or an alias.
    if (/[:/@\\]/.test(version) && !version.startsWith('sha256:') && type === 'npm') expect(satelliteRefuses).toBe(true)
  })

  it.each(RUNTIME_ARGS)('runner options for %s %j: the same decision on both sides (global servers)', (type, args) => {
    expect(satellite.runtimeArgsProblem(type, args) !== undefined).toBe(backend.runtimeArgsProblem(type, args, 'global') !== null)
  })

  it('offer the same runner options', () => {
    for (const type of ['npm', 'pypi', 'docker'] as const) {
      const allowed = backend.RUNTIME_OPTIONS[type]
      for (const flag of allowed?.flags ?? []) expect(satellite.runtimeArgsProblem(type, [flag])).toBeUndefined()
    }
  })
})
