import { readdirSync, readFileSync } from 'node:fs'

/** Processes on this host as Linux's /proc shows them: a tree below a pid, resident memory, CPU time. */

/** Every process below `pid`, from the parent links in /proc. */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = []
  const walk = (parent: number) => {
    for (const [child, of] of parents) if (of === parent) (found.push(child), walk(child))
  }
  walk(pid)
  return found
}

/** Resident memory of one process in MiB; 0 once it is gone. */
export function rssMbOf(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
  } catch {
    return 0
  }
}

/** User plus system CPU time of one process in microseconds (clock ticks of 10 ms); 0 once it is gone. */
export function cpuMicrosOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return 0
  }
}

/** Whether the process runs this very Node binary (a server, as opposed to bubblewrap around it). */
export function isNode(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === process.execPath
  } catch {
    return false
  }
}
