/**
 * Structured logs: one line per entry, as text (`time level message key=value ...`) or as JSON
 * lines (`--log-format json`). Verbosity follows `--v`: 0 logs changes and errors, 2 every
 * collection, 4 every request.
 */

/** Fields attached to a log entry. */
export type LogFields = Record<string, unknown>;

/** Severity of a log entry. */
export type LogLevel = "error" | "warn" | "info" | "debug";

/** Where the engine and its helpers log. */
export interface Logger {
  error(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  /** Verbose entry, written only when the verbosity is at least `level` (1..10). */
  debug(level: number, message: string, fields?: LogFields): void;
  /** Whether `debug(level, ...)` would write; lets callers skip building costly fields. */
  enabled(level: number): boolean;
}

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions {
  /** `text` (default) or `json`. */
  format?: string;
  /** `--v`; 0 by default. */
  verbosity?: number;
  /** Receives each line without its newline; stderr by default. */
  write?: (line: string) => void;
  /** The clock, ms since the epoch. */
  now?: () => number;
}

function formatValue(value: unknown): string {
  if (value instanceof Error) return formatValue(value.message);
  if (typeof value === "string") {
    return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  }
  if (value === undefined) return "undefined";
  return JSON.stringify(value) ?? String(value);
}

/**
 * Build a logger writing text or JSON lines.
 *
 * @example
 * ```ts
 * const log = createLogger({ format: "json", verbosity: 2 });
 * log.info("collector started", { hpa: "default/web", metric: "queue-length" });
 * ```
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const json = options.format === "json";
  const verbosity = options.verbosity ?? 0;
  const write = options.write ?? ((line: string) => console.error(line));
  const now = options.now ?? (() => Date.now());
  const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
    const time = new Date(now()).toISOString();
    if (json) {
      const entry: LogFields = { time, level, msg: message };
      for (const [k, v] of Object.entries(fields ?? {})) {
        if (v !== undefined) entry[k] = v instanceof Error ? v.message : v;
      }
      write(JSON.stringify(entry));
      return;
    }
    let line = `${time} ${level.toUpperCase()} ${message}`;
    for (const [k, v] of Object.entries(fields ?? {})) {
      if (v !== undefined) line += ` ${k}=${formatValue(v)}`;
    }
    write(line);
  };
  return {
    error: (m, f) => emit("error", m, f),
    warn: (m, f) => emit("warn", m, f),
    info: (m, f) => emit("info", m, f),
    debug: (level, m, f) => {
      if (verbosity >= level) emit("debug", m, f);
    },
    enabled: (level) => verbosity >= level,
  };
}

/** A logger that writes nothing (tests, embedding). */
export function silentLogger(): Logger {
  const none = (): void => {};
  return { error: none, warn: none, info: none, debug: none, enabled: () => false };
}

/** One entry kept by {@linkcode memoryLogger}. */
export interface LogEntry {
  level: LogLevel;
  message: string;
  fields: LogFields;
}

/** A logger that keeps its entries in memory (tests assert on them). Debug entries are kept too. */
export function memoryLogger(): Logger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const push = (level: LogLevel, message: string, fields?: LogFields): void => {
    entries.push({ level, message, fields: fields ?? {} });
  };
  return {
    entries,
    error: (m, f) => push("error", m, f),
    warn: (m, f) => push("warn", m, f),
    info: (m, f) => push("info", m, f),
    debug: (_level, m, f) => push("debug", m, f),
    enabled: () => true,
  };
}
