/**
 * What the reference satellite runs for a package launch and what it refuses before running
 * anything, per registry type: the argv it builds (the runner's options always end before the
 * package) and the versions, names, runner options and variables it will not take.
 */
import { describe, expect, it } from 'vitest'
import { LaunchError, packageCommand } from '../../examples/satellite/src/launch.js'
import type { PackageLaunch } from '../../examples/satellite/src/types.js'

const none = new Map<string, string>()
const launch = (overrides: Partial<PackageLaunch>): PackageLaunch => ({
  kind: 'package', registry_type: 'npm', identifier: 'some-server', version: '1.2.3', runtime_hint: null,
  runtime_args: [], package_args: [], env: {}, transport: { type: 'stdio' }, ...overrides,
})
const command = (overrides: Partial<PackageLaunch>) => packageCommand(launch(overrides), none, { packageDirs: [] })

describe('reference satellite: launch rules', () => {
  it.each([
    [{ runtime_args: ['-y', '--quiet'] }, ['--yes', '-y', '--quiet', '--', 'some-server@1.2.3']],
    [{ version: '^1.2.0', package_args: ['--port', '1'] }, ['--yes', '--', 'some-server@^1.2.0', '--port', '1']],
    [{ version: 'next' }, ['--yes', '--', 'some-server@next']],
    [{ identifier: '@acme/server', version: null }, ['--yes', '--', '@acme/server']],
  ] satisfies Array<[Partial<PackageLaunch>, string[]]>)('npm %j → npx %j', async (overrides, args) => {
    expect(await command(overrides)).toMatchObject({ command: 'npx', args, runner: 'npx' })
  })

  it.each([
    [{ version: '1.2.0' }, ['mcp-time@1.2.0']],
    [{ version: '>=1.2,<2', runtime_args: ['--python', '3.12', '-q'] }, ['--python', '3.12', '-q', '--from', 'mcp-time>=1.2,<2', 'mcp-time']],
    [{ version: '2.0.0rc1', runtime_args: ['--python=3.11', '--no-progress'] }, ['--python=3.11', '--no-progress', 'mcp-time@2.0.0rc1']],
  ] satisfies Array<[Partial<PackageLaunch>, string[]]>)('pypi %j → uvx %j', async (overrides, args) => {
    expect(await command({ registry_type: 'pypi', identifier: 'mcp-time', ...overrides })).toMatchObject({ command: 'uvx', args, runner: 'uvx' })
  })

  it('oci: `--` before the image, a digest after @', async () => {
    const digest = `sha256:${'a'.repeat(64)}`
    expect(await command({ registry_type: 'oci', identifier: 'ghcr.io/acme/weather', version: digest })).toMatchObject({
      command: 'docker', args: ['run', '--rm', '-i', '--', `ghcr.io/acme/weather@${digest}`], runner: 'docker',
    })
  })

  it.each([
    ['npm version file:', { version: 'file:/tmp/x' }, /the version "file:\/tmp\/x" is not a valid npm version/],
    ['npm version link:', { version: 'link:../x' }, /not a valid npm version/],
    ['npm git spec', { version: 'git+https://example.com/x.git' }, /not a valid npm version/],
    ['npm github spec', { version: 'acme/evil' }, /not a valid npm version/],
    ['npm alias', { version: 'npm:other@1.0.0' }, /not a valid npm version/],
    ['npm URL', { version: 'https://example.com/x.tgz' }, /not a valid npm version/],
    ['npm name with a path', { identifier: '../evil' }, /"..\/evil" is not a valid npm package name/],
    ['npm name as an option', { identifier: '--prefix=/x' }, /not a valid npm package name/],
    ['npx option', { runtime_args: ['--node-options=--require=/x.js'] }, /runtime argument "--node-options=--require=\/x.js"/],
    ['npx --package', { runtime_args: ['--package', 'evil'] }, /runtime argument "--package"/],
    ['pypi URL', { registry_type: 'pypi', identifier: 'mcp-time', version: '@ https://example.com/x.whl' }, /not a valid pypi version/],
    ['pypi arbitrary equality', { registry_type: 'pypi', identifier: 'mcp-time', version: '===anything' }, /not a valid pypi version/],
    ['pypi path', { registry_type: 'pypi', identifier: 'mcp-time', version: '/tmp/x' }, /not a valid pypi version/],
    ['uvx --with', { registry_type: 'pypi', identifier: 'mcp-time', version: '1.0', runtime_args: ['--with', 'evil'] }, /runtime argument "--with"/],
    ['uvx --python outside 3.x', { registry_type: 'pypi', identifier: 'mcp-time', version: '1.0', runtime_args: ['--python', '/usr/bin/evil'] }, /runtime argument "--python"/],
    ['docker option', { registry_type: 'docker', identifier: 'acme/x', version: '1', runtime_args: ['--privileged'] }, /runtime argument "--privileged"/],
    ['docker tag with a slash', { registry_type: 'docker', identifier: 'acme/x', version: 'a/b' }, /not a valid docker version/],
    ['docker image as an option', { registry_type: 'docker', identifier: '-v/:/host', version: '1' }, /not a valid docker package name/],
    ['docker image with ..', { registry_type: 'oci', identifier: 'acme/../x', version: '1' }, /not a valid oci package name/],
    ['PATH', { env: { PATH: '/tmp/evil' } }, /PATH changes how the runtime loads code/],
    ['npm_config_*', { env: { npm_config_registry: 'http://evil' } }, /npm_config_registry/],
    ['PYTHONPATH', { env: { PythonPath: '/tmp' } }, /PythonPath/],
    ['DYLD_*', { env: { DYLD_INSERT_LIBRARIES: 'x' } }, /DYLD_INSERT_LIBRARIES/],
    ['a name with =', { env: { 'A=B': 'x' } }, /"A=B" is not an environment variable name/],
    // bubblewrap reads the environment as NUL-separated options: this would mount the host's root.
    ['a NUL in a value', { env: { MODE: 'x\0--bind\0/\0/host' } }, /the value of MODE holds a NUL character/],
  ] satisfies Array<[string, Partial<PackageLaunch>, RegExp]>)('refuses %s', async (_what, overrides, message) => {
    const refused = command(overrides)
    await expect(refused).rejects.toThrow(LaunchError)
    await expect(refused).rejects.toThrow(message)
  })
})
