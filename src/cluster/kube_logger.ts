/**
 * The logger that the Kubernetes API clients of this folder (informers, event recorder, leader
 * election) write to: a level and a line, leaving format and verbosity to the caller.
 *
 * @module
 */

/** Log levels of the Kubernetes clients' logger. */
export type KubeLogLevel = "debug" | "info" | "warn" | "error";

/** Receives the Kubernetes clients' log lines. */
export type KubeLogger = (level: KubeLogLevel, message: string) => void;

/**
 * `logger` (or nothing when undefined) behind a guard: a logger that throws must not break the
 * retry paths that log.
 */
export function guardedLogger(logger: KubeLogger | undefined): KubeLogger {
  const log = logger ?? (() => {});
  return (level, message) => {
    try {
      log(level, message);
    } catch {
      // nowhere left to report it
    }
  };
}
