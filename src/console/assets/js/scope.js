// Why: a page or tab's timers and late answers must stop when the user leaves it; a Scope ends
// them together, and every()/coalesced() poll through one without piling up requests.

/** What a page (or a tab) runs: its timers stop and its late answers are dropped when it ends. */
export class Scope {
  constructor() {
    this.alive = true;
    this.timers = new Set();
    this.ends = [];
    this.visible = [];
  }
  after(ms, fn) {
    if (!this.alive) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.alive) fn();
    }, ms);
    this.timers.add(timer);
  }
  onEnd(fn) {
    this.ends.push(fn);
  }
  onVisible(fn) {
    this.visible.push(fn);
  }
  end() {
    if (!this.alive) return;
    this.alive = false;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const fn of this.ends) fn();
  }
}

/** Repeats fn every ms while the scope lives, skipping the turns when the page is hidden. */
export function every(scope, ms, fn) {
  const turn = () => {
    if (!document.hidden) fn();
    scope.after(ms, turn);
  };
  scope.after(ms, turn);
}

/**
 * Wraps an async refresh so one request runs at a time: a call made meanwhile runs it once more
 * when that one ends (it may have started before the change the caller wants to see).
 */
export function coalesced(scope, fn) {
  let running = null;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await fn();
      } while (again && scope.alive);
      running = null;
    })();
    return running;
  };
}
