/**
 * A line said while the server starts, before its logger exists, shaped as that logger's JSON lines
 * (pino's numeric levels: 30 info, 40 warn), so a log pipeline parses it like any other. Only what
 * may be loaded before everything else: tracing writes through it before Nest is required.
 */
export function writeStartLine(level: 30 | 40, msg: string): void {
  process.stdout.write(JSON.stringify({ level, time: Date.now(), msg }) + '\n');
}
