/**
 * `[machines.bmc]`: what `check` (and `run`, and every reload) accepts and refuses, each refusal
 * at the file's line and key.
 */
import assert from "node:assert/strict";
import { ConfigError } from "../../../src/config/config_error.ts";
import { loadConfigFile } from "../../../src/config/load_config.ts";
import { credentialProblem } from "../../../src/config/bmc_credentials.ts";
import { normalSha256Fingerprint } from "../../../src/config/schema.ts";

const CA = new URL("../server/testdata/ca.pem", import.meta.url).pathname;

async function withScratch(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/user`, "admin\n", { mode: 0o600 });
    await Deno.writeTextFile(`${dir}/password`, "s3cret\n", { mode: 0o600 });
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function inventory(dir: string, bmc: Record<string, string>): string {
  const lines = Object.entries({
    endpoint: '"https://10.0.9.11"',
    system: '"/redfish/v1/Systems/1"',
    username_file: `"${dir}/user"`,
    password_file: `"${dir}/password"`,
    ca_file: `"${CA}"`,
    ...bmc,
  }).filter(([, v]) => v !== "").map(([k, v]) => `${k} = ${v}`);
  return ["[[machines]]", 'name = "w-1"', "", "[machines.bmc]", ...lines, ""].join("\n");
}

async function issuesOf(
  dir: string,
  text: string,
): Promise<{ line?: number; path: string; message: string }[]> {
  const path = `${dir}/keelson.toml`;
  await Deno.writeTextFile(path, text);
  const error = await loadConfigFile(path, { namedFiles: true }).then(() => undefined, (e) => e);
  if (error === undefined) return [];
  assert.ok(error instanceof ConfigError, String(error));
  return error.issues.map((i) => ({
    ...(i.line !== undefined ? { line: i.line } : {}),
    path: i.path,
    message: i.message,
  }));
}

Deno.test("[machines.bmc]: a complete table is accepted, with the defaults of poll_interval and timeout", async () => {
  await withScratch(async (dir) => {
    const path = `${dir}/keelson.toml`;
    await Deno.writeTextFile(path, inventory(dir, {}));
    const config = await loadConfigFile(path, { namedFiles: true });
    const bmc = config.machines[0]!.bmc!;
    assert.equal(bmc.endpoint, "https://10.0.9.11");
    assert.equal(bmc.poll_interval.ms, 5_000);
    assert.equal(bmc.timeout.ms, 5_000);
    // system and ca_file may be left out (discovery; the system's CAs)
    await Deno.writeTextFile(path, inventory(dir, { system: "", ca_file: "" }));
    assert.equal(
      (await loadConfigFile(path, { namedFiles: true })).machines[0]!.bmc!.system,
      undefined,
    );
  });
});

Deno.test("[machines.bmc]: each bad key is refused at its line", async () => {
  await withScratch(async (dir) => {
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ endpoint: '"http://10.0.9.11"' }, "endpoint", /only https is accepted/],
      [{ endpoint: '"https://root:pw@10.0.9.11"' }, "endpoint", /holds credentials/],
      [{ endpoint: '"https://10.0.9.11/redfish/v1"' }, "endpoint", /base URL only/],
      [{ endpoint: '"not a url"' }, "endpoint", /is not a URL/],
      [{ system: '"/redfish/v1/Systems/../Managers"' }, "system", /Redfish system path/],
      [{ poll_interval: '"100ms"' }, "poll_interval", /between 1s and 10m/],
      [{ timeout: '"2m"' }, "timeout", /between 100ms and 1m/],
      [{ username_file: `"${dir}/missing"` }, "username_file", /cannot read ".*missing": /],
      [{ ca_file: `"${dir}/user"` }, "ca_file", /holds no PEM certificate/],
      [
        { ca_file: "", certificate_sha256: `"${"AB:".repeat(31)}A"` },
        "certificate_sha256",
        /is not a SHA-256 fingerprint: write the 64 hex digits `openssl x509 -noout/,
      ],
      [
        { certificate_sha256: `"${"ab".repeat(32)}"` },
        "certificate_sha256",
        /is given with ca_file; give one: ca_file .* or certificate_sha256/,
      ],
    ];
    for (const [bmc, key, message] of cases) {
      const issues = await issuesOf(dir, inventory(dir, bmc));
      assert.equal(issues.length, 1, `${key}: ${JSON.stringify(issues)}`);
      const line = inventory(dir, bmc).split("\n").findIndex((l) => l.startsWith(`${key} =`)) + 1;
      assert.equal(issues[0]!.path, `machines[0].bmc.${key}`, JSON.stringify(issues));
      assert.equal(issues[0]!.line, line, key);
      assert.match(issues[0]!.message, message);
    }
    // a table without credentials
    const missing = await issuesOf(dir, inventory(dir, { username_file: "" }));
    assert.equal(missing[0]?.path, "machines[0].bmc.username_file");
  });
});

Deno.test("[machines.bmc]: a password file every user can read is refused, and so is an empty one", async () => {
  await withScratch(async (dir) => {
    await Deno.chmod(`${dir}/password`, 0o644);
    const open = await issuesOf(dir, inventory(dir, {}));
    assert.equal(open.length, 1, JSON.stringify(open));
    assert.equal(open[0]!.path, "machines[0].bmc.password_file");
    assert.match(open[0]!.message, /readable by every user of the host \(mode 644\)/);
    await Deno.writeTextFile(`${dir}/password`, "\n", { mode: 0o600 });
    await Deno.chmod(`${dir}/password`, 0o600);
    const empty = await issuesOf(dir, inventory(dir, {}));
    assert.match(empty[0]!.message, /is empty/);
  });
});

Deno.test("credentialProblem: basic auth cannot carry ':' in the user, a line break or a control character", () => {
  assert.equal(credentialProblem("admin", true), undefined);
  assert.equal(credentialProblem("pass:word", false), undefined);
  assert.match(credentialProblem("ad:min", true)!, /':'/);
  assert.match(credentialProblem("a\nb", false)!, /printable ASCII/);
  assert.match(credentialProblem("x".repeat(257), false)!, /at most 256/);
});

Deno.test("[machines.bmc]: certificate_sha256 instead of ca_file, with or without ':', in the form node:tls compares", async () => {
  await withScratch(async (dir) => {
    const path = `${dir}/keelson.toml`;
    const pairs = "0a".repeat(32).match(/../g)!;
    const expected = pairs.join(":").toUpperCase();
    for (const written of [pairs.join(""), pairs.join(":"), `sha256 Fingerprint=${expected}`]) {
      await Deno.writeTextFile(
        path,
        inventory(dir, { ca_file: "", certificate_sha256: `"${written}"` }),
      );
      const bmc = (await loadConfigFile(path, { namedFiles: true })).machines[0]!.bmc!;
      assert.equal(bmc.certificate_sha256, expected, written);
      assert.equal(bmc.ca_file, undefined);
    }
  });
});

Deno.test("normalSha256Fingerprint: 64 hex digits, or 32 pairs joined by ':', nothing else", () => {
  const upper = `${"AB:".repeat(31)}AB`;
  assert.equal(normalSha256Fingerprint("ab".repeat(32)), upper);
  assert.equal(normalSha256Fingerprint(` ${upper.toLowerCase()}\n`), upper);
  assert.equal(normalSha256Fingerprint("ab".repeat(31)), undefined); // SHA-1 is 20 bytes; short
  assert.equal(normalSha256Fingerprint("ab".repeat(33)), undefined);
  assert.equal(normalSha256Fingerprint(`${"AB:".repeat(30)}ABAB`), undefined); // a missing ':'
  assert.equal(normalSha256Fingerprint(`${"AB:".repeat(31)}AG`), undefined);
  assert.equal(normalSha256Fingerprint(`sha1 Fingerprint=${upper}`), undefined);
});

Deno.test("[machines.bmc]: an endpoint with an empty query or fragment, user information or a character a URL parser drops is refused", async () => {
  await withScratch(async (dir) => {
    // before: each parsed to "https://10.0.9.11/" and was accepted, while the requests went to
    // the text as written ("https://10.0.9.11?/redfish/v1/Systems/1": the path became a query)
    const cases: [string, RegExp][] = [
      ["https://10.0.9.11?", /holds a query or fragment/],
      ["https://10.0.9.11#", /holds a query or fragment/],
      ["https://10.0.9.11/?", /holds a query or fragment/],
      ["https://10.0.9.11:8443#x", /holds a query or fragment/],
      ["https://@10.0.9.11", /holds credentials/],
      ["https://:@10.0.9.11", /holds credentials/],
      ["https://10.0.9.11\t", /holds a space, control character or backslash/],
      ["https://10.0.9.11\\", /holds a space, control character or backslash/],
      [" https://10.0.9.11", /holds a space, control character or backslash/],
    ];
    for (const [endpoint, message] of cases) {
      const issues = await issuesOf(dir, inventory(dir, { endpoint: JSON.stringify(endpoint) }));
      assert.equal(issues.length, 1, `${endpoint}: ${JSON.stringify(issues)}`);
      assert.equal(issues[0]!.path, "machines[0].bmc.endpoint", endpoint);
      assert.match(issues[0]!.message, message, endpoint);
    }
    for (const endpoint of ["https://10.0.9.11/", "https://bmc-1.example.net:8443"]) {
      const issues = await issuesOf(dir, inventory(dir, { endpoint: JSON.stringify(endpoint) }));
      assert.deepEqual(issues, [], endpoint);
    }
  });
});

Deno.test("[machines.bmc]: a ca_file whose certificate does not parse is refused with the file and the reason", async () => {
  await withScratch(async (dir) => {
    const good = await Deno.readTextFile(CA);
    const lines = good.split("\n");
    const files: [string, string, RegExp][] = [
      // before: accepted, and every poll then failed as "unreachable"
      [
        "fake.pem",
        "-----BEGIN CERTIFICATE-----\nMIIBfakeCAfakeCAfake\n-----END CERTIFICATE-----\n",
        /fake\.pem" holds a certificate that cannot be parsed \(certificate 1, line 1: /,
      ],
      [
        "cut.pem",
        [...lines.slice(0, 3), ...lines.slice(4)].join("\n"),
        /cut\.pem" holds a certificate that cannot be parsed \(certificate 1, line 1: /,
      ],
      [
        "second.pem",
        `${good}-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n`,
        new RegExp(
          `second\\.pem" holds a certificate that cannot be parsed \\(certificate 2, ` +
            `line ${good.split("\n").length}: `,
        ),
      ],
      [
        "unterminated.pem",
        `${good}-----BEGIN CERTIFICATE-----\n${lines[1]}\n`,
        /unterminated\.pem" is not taken as a CA bundle by the TLS library: /,
      ],
    ];
    for (const [name, text, message] of files) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
      const issues = await issuesOf(dir, inventory(dir, { ca_file: `"${dir}/${name}"` }));
      assert.equal(issues.length, 1, `${name}: ${JSON.stringify(issues)}`);
      assert.equal(issues[0]!.path, "machines[0].bmc.ca_file", name);
      assert.match(issues[0]!.message, message, name);
    }
  });
});
