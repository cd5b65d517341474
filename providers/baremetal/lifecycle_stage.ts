/**
 * One lifecycle stage of the provider (host side started, connected, leading), held whole: the
 * hook that begins the stage builds its object complete and puts it here, and the stage's signal
 * takes it out again. The provider's parts read a stage through its holder, never a field of it
 * filled in later, so none of them sees half of a stage.
 *
 * @module
 */

/** The current object of one lifecycle stage, while the stage lasts. */
export class LifecycleStage<T> {
  #current: T | undefined;

  /** The stage's object; undefined before the stage began or after it ended. */
  get current(): T | undefined {
    return this.#current;
  }

  /**
   * Begins the stage with its object, built whole.
   * @param value the stage's object
   * @param signal ends the stage when it aborts. @default the stage lasts as long as the process
   * @returns the object
   */
  begin<V extends T>(value: V, signal?: AbortSignal): V {
    this.#current = value;
    signal?.addEventListener("abort", () => {
      if (this.#current === value) this.#current = undefined;
    }, { once: true });
    return value;
  }
}
