/**
 * One render at a time, in call order, with the calls of a burst sharing one: the announcers'
 * `sync`. An informer delivers its initial list (or a storm of updates) synchronously, and each
 * render reads every Service, so one render per event would cost O(N²) for N events; and a render
 * reads the configuration and the caches around its awaits, so two at once could apply an older
 * reading last (a periodic render started before a reload retiring the host would put its VIPs back
 * after the reload's withdrawal).
 *
 * @module
 */

/** Runs `render` for calls that arrive while none is waiting, one at a time. */
export class CoalescedRender<T> {
  #render: (reason: string) => Promise<T>;
  #waiting: Promise<T> | undefined;
  #previous: Promise<unknown> = Promise.resolve();

  /** @param render the render; the reason of the first call of a burst is the one it gets */
  constructor(render: (reason: string) => Promise<T>) {
    this.#render = render;
  }

  /**
   * A render after every render already started: the one waiting to start when there is one
   * (this call joins it), else a new one.
   * @param reason for the log
   * @returns that render's result (its rejection, when it throws)
   */
  run(reason: string): Promise<T> {
    this.#waiting ??= this.#previous.then(() => {
      this.#waiting = undefined;
      return this.#render(reason);
    });
    // a render that threw does not stop the next one
    this.#previous = this.#waiting.catch(() => undefined);
    return this.#waiting;
  }
}
