/**
 * The satellite's own log, one line per event on stderr. It never receives secret values, API
 * keys or tokens: callers pass ids, counts and error messages only.
 */
export interface Logger {
  info(message: string): void
  warn(message: string): void
  error(message: string): void
}

export function consoleLogger(write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Logger {
  const at = (level: string, message: string) => write(`${new Date().toISOString()} ${level} ${message}`)
  return {
    info: (message) => at('info ', message),
    warn: (message) => at('warn ', message),
    error: (message) => at('error', message),
  }
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined }
