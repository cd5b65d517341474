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
        if (content === undefined) {
          return Promise.reject(new Deno.errors.NotFound(`no such file: ${path}`));
        }
        if (content instanceof Error) return Promise.reject(content);
        return Promise.resolve(content);
      },
    },
    files,
  };
}

Deno.test("metricsTokenReader() reads the token, trimmed, and re-reads it only after 10 s", async () => {
  const fake = fakeFiles({ "/t": "s3cret-token\n" });
  const token = metricsTokenReader(() => "/t", fake.options);
  assert.equal(await token(), "s3cret-token");
  fake.files["/t"] = "rotated";
  fake.advance(9_000);
  assert.equal(await token(), "s3cret-token", "cached within 10 s");
  fake.advance(2_000);
  assert.equal(await token(), "rotated");
  assert.equal(fake.reads.length, 2);
});

Deno.test("metricsTokenReader() requires no token when none is configured", async () => {
  const fake = fakeFiles({});
  assert.equal(await metricsTokenReader(() => undefined, fake.options)(), undefined);
  assert.deepEqual(fake.reads, []);
});

Deno.test("metricsTokenReader() fails closed on a missing, empty or unusable file", async () => {
  const cases: [content: string | Error | undefined, why: string][] = [
    [undefined, "missing"],
    [new Deno.errors.PermissionDenied("denied"), "unreadable"],
    ["  \n", "empty"],
    ["two words", "a space cannot be sent in a bearer token"],
    ['quote"d', "a quote cannot be sent in a bearer token"],
  ];
  for (const [content, why] of cases) {
    const fake = fakeFiles(content === undefined ? {} : { "/t": content });
    const first = await metricsTokenReader(() => "/t", fake.options)();
    assert.ok(first !== undefined && first.length >= 32, `${why}: a random token, not none`);
    const second = await metricsTokenReader(() => "/t", fake.options)();
    assert.notEqual(first, second, `${why}: nobody can know the token`);
  }
});

Deno.test("metricsTokenReader() follows a reload that changes the file", async () => {
  const fake = fakeFiles({ "/a": "token-a", "/b": "token-b" });
  let path = "/a";
  const token = metricsTokenReader(() => path, fake.options);
  assert.equal(await token(), "token-a");
  path = "/b";
  assert.equal(await token(), "token-b", "a new path is read at once");
});

Deno.test("metricsTokenReader() shares one read among concurrent requests", async () => {
  let reads = 0;
  let release = () => {};
  const token = metricsTokenReader(() => "/t", {
    read: () => {
      reads++;
      return new Promise((resolve) => release = () => resolve("t0ken"));
    },
  });
  const answers = [token(), token(), token()];
  release();
  assert.deepEqual(await Promise.all(answers), ["t0ken", "t0ken", "t0ken"]);
  assert.equal(reads, 1);
});

Deno.test("metricsTokenReader() refuses a FIFO or a device at once and fails closed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fifo = `${dir}/fifo`;
    assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
    for (const path of [fifo, "/dev/zero"]) {
      // before: a synchronous read that never ended (FIFO) or grew without bound (/dev/zero)
      const token = await metricsTokenReader(() => path)();
      assert.ok(token !== undefined && token.length >= 32, `${path}: a random token, not none`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
