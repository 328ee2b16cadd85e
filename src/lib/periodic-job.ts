// Work an instance repeats while it runs: publishing its live figures and its view of the
// deployments, renewing its lease, polling the store's revision, retrying what Redis did not
// take. A run may outlast its interval (a slow store, Redis timing out): the ticks that find it
// going are skipped, so runs never pile up. The timer does not keep the process alive, and
// stopping waits for the run in progress, so what comes after (deleting the instance's rows,
// closing the store) does not race it.

export interface PeriodicJob {
  /**
   * Stops the ticks; resolves once the run in progress, if any, is over. A run may stop its
   * own job (it has nothing left to do) but must not await this: that would wait for itself.
   */
  stop(): Promise<void>;
}

/**
 * Calls `run` every `intervalMs`, the first time one interval from now. What a run throws goes
 * to `onError`; the next tick runs again.
 */
export function startPeriodicJob(options: {
  intervalMs: number;
  run: () => Promise<void>;
  onError: (err: unknown) => void;
}): PeriodicJob {
  const { run, onError } = options;
  let running: Promise<void> | undefined;
  const once = async () => {
    try {
      await run();
    } catch (err) {
      onError(err);
    }
  };
  const timer = setInterval(() => {
    running ??= once().finally(() => {
      running = undefined;
    });
  }, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
