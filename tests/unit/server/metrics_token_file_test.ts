import assert from "node:assert/strict";
import { metricsTokenReader } from "../../../src/server/metrics_token_file.ts";

function fakeFiles(files: Record<string, string | Error>) {
  let clock = 0;
  const reads: string[] = [];
  return {
    reads,
    advance: (ms: number) => clock += ms,
    options: {
      now: () => clock,
      read: (path: string) => {
        reads.push(path);
        const content = files[path];
        if (content === undefined) throw new Deno.errors.NotFound(`no such file: ${path}`);
        if (content instanceof Error) throw content;
        return content;
      },
    },
    files,
  };
}

Deno.test("metricsTokenReader() reads the token, trimmed, and re-reads it only after 10 s", () => {
  const fake = fakeFiles({ "/t": "s3cret-token\n" });
  const token = metricsTokenReader(() => "/t", fake.options);
  assert.equal(token(), "s3cret-token");
  fake.files["/t"] = "rotated";
  fake.advance(9_000);
  assert.equal(token(), "s3cret-token", "cached within 10 s");
  fake.advance(2_000);
  assert.equal(token(), "rotated");
  assert.equal(fake.reads.length, 2);
});

Deno.test("metricsTokenReader() requires no token when none is configured", () => {
  const fake = fakeFiles({});
  assert.equal(metricsTokenReader(() => undefined, fake.options)(), undefined);
  assert.deepEqual(fake.reads, []);
});

Deno.test("metricsTokenReader() fails closed on a missing, empty or unusable file", () => {
  const cases: [content: string | Error | undefined, why: string][] = [
    [undefined, "missing"],
    [new Deno.errors.PermissionDenied("denied"), "unreadable"],
    ["  \n", "empty"],
    ["two words", "a space cannot be sent in a bearer token"],
    ['quote"d', "a quote cannot be sent in a bearer token"],
  ];
  for (const [content, why] of cases) {
    const fake = fakeFiles(content === undefined ? {} : { "/t": content });
    const first = metricsTokenReader(() => "/t", fake.options)();
    assert.ok(first !== undefined && first.length >= 32, `${why}: a random token, not none`);
    const second = metricsTokenReader(() => "/t", fake.options)();
    assert.notEqual(first, second, `${why}: nobody can know the token`);
  }
});

Deno.test("metricsTokenReader() follows a reload that changes the file", () => {
  const fake = fakeFiles({ "/a": "token-a", "/b": "token-b" });
  let path = "/a";
  const token = metricsTokenReader(() => path, fake.options);
  assert.equal(token(), "token-a");
  path = "/b";
  assert.equal(token(), "token-b", "a new path is read at once");
});
