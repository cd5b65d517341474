/**
 * The pager every list goes through (`KubeClient.list`, the read-only client's live reads, a
 * Node's Pods): pages of `limit` followed by their continue tokens; a token that expired between
 * pages (410 Gone) restarts the list once from the first page, as client-go's pager does, so the
 * result is one consistent list.
 *
 * A page whose answer is larger than a page may be (`BODY_LIMITS.listPage`, reason
 * `ResponseTooLarge`) is asked for again with a tenth of the items, down to one, and the list goes
 * on with that smaller page: a cluster of very large objects is still read whole, each page within
 * the bound, while a server that answers past the bound whatever is asked costs four bounded
 * reads (500, 50, 5, 1 items) and then a clear error.
 *
 * @module
 */
import { RESPONSE_TOO_LARGE } from "./bounded_body.ts";
import { KubeApiError } from "./ports.ts";

/** What the pager needs of one page. */
export interface PagedList {
  items: unknown[];
  /** The token of the next page; undefined on the last page. */
  continueToken: string | undefined;
}

/** Options of `pageThrough`. */
export interface PageThroughOptions {
  /** Items asked for per page (`limit`), made smaller when a page is too large. */
  pageSize: number;
  /** Refuse a collection above this many items instead of truncating it. @default unbounded */
  maxItems?: number;
  /** Checked before each page. */
  signal?: AbortSignal;
}

/**
 * Fetches every page of one list.
 * @param fetchPage GETs the page of at most `limit` items after `continueToken` (undefined: the
 *   first); throws `KubeApiError` with code 410 when the token expired, with reason
 *   `ResponseTooLarge` when the answer was past its cap
 * @param what the list, for the error above `maxItems` (e.g. `list /api/v1/nodes`)
 * @param options page size, item bound and signal
 * @returns every item, the last page (its other fields, e.g. the resourceVersion) and the number
 *   of requests sent
 * @throws {KubeApiError} when a page fails (a second expiry too); {Error} above `maxItems`
 */
export async function pageThrough<P extends PagedList>(
  fetchPage: (continueToken: string | undefined, limit: number) => Promise<P>,
  what: string,
  options: PageThroughOptions,
): Promise<{ items: unknown[]; last: P; requests: number }> {
  const maxItems = options.maxItems ?? Infinity;
  let limit = Math.max(1, Math.floor(options.pageSize));
  const items: unknown[] = [];
  let requests = 0;
  let restarted = false;
  let continueToken: string | undefined;
  // a loop, not do/while: the restart's `continue` must go round again without a token
  while (true) {
    options.signal?.throwIfAborted();
    requests++;
    let page: P;
    try {
      page = await fetchPage(continueToken, limit);
    } catch (error) {
      if (error instanceof KubeApiError && error.reason === RESPONSE_TOO_LARGE && limit > 1) {
        limit = Math.ceil(limit / 10);
        continue;
      }
      if (error instanceof KubeApiError && error.code === 410 && continueToken && !restarted) {
        restarted = true;
        items.length = 0;
        continueToken = undefined;
        continue;
      }
      throw error;
    }
    // a server may ignore `limit` (the API allows it); the total stays bounded all the same
    if (items.length + page.items.length > maxItems) {
      throw new Error(`Cannot ${what}: it holds more than ${maxItems} items`);
    }
    items.push(...page.items);
    continueToken = page.continueToken;
    if (!continueToken) return { items, last: page, requests };
  }
}

/** What `listEveryPage` needs: one page of a collection (`RestApi.listPage`). */
export interface PageLister<P extends PagedList & { ignored: number }> {
  listPage(
    path: string,
    options: { limit: number; continueToken?: string; signal?: AbortSignal },
  ): Promise<P>;
}

/**
 * Lists one collection page by page through `pageThrough`, counting the items the pages left out
 * (their kind or version is not the collection's) in the list that is returned: a list restarted
 * after an expired token counts only its own pages.
 * @param lister GETs one page
 * @param path the collection, e.g. `/api/v1/nodes`
 * @param options page size, item bound and signal
 * @returns every item, the last page, the number of requests sent and of items left out
 * @throws {KubeApiError} when a page fails; {Error} above `maxItems`
 */
export async function listEveryPage<P extends PagedList & { ignored: number }>(
  lister: PageLister<P>,
  path: string,
  options: PageThroughOptions,
): Promise<{ items: unknown[]; last: P; requests: number; ignored: number }> {
  let ignored = 0;
  const { signal } = options;
  const listed = await pageThrough(
    async (continueToken, limit) => {
      if (!continueToken) ignored = 0; // the first page, or a restart after an expired token
      const page = await lister.listPage(path, {
        limit,
        ...(continueToken ? { continueToken } : {}),
        ...(signal ? { signal } : {}),
      });
      ignored += page.ignored;
      return page;
    },
    `list ${path}`,
    options,
  );
  return { ...listed, ignored };
}
