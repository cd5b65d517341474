import assert from "node:assert/strict";
import {
  getJsonLinesFormatter,
  getTextFormatter,
  type LogLevel,
  type LogRecord,
} from "@logtape/logtape";
import {
  namesJournalStream,
  syslogPrefix,
  withSyslogPrefix,
} from "../../../src/log/journal_stream.ts";

function record(level: LogLevel, message: string): LogRecord {
  return {
    category: ["keelson", "test"],
    level,
    message: [message],
    rawMessage: message,
    timestamp: 0,
    properties: {},
  };
}

Deno.test("syslogPrefix() gives journald the syslog priority of each level", () => {
  assert.deepEqual(
    (["trace", "debug", "info", "warning", "error", "fatal"] as const).map(syslogPrefix),
    ["<7>", "<7>", "<6>", "<4>", "<3>", "<2>"],
  );
});

Deno.test("withSyslogPrefix() prefixes each text line, so every journald entry of a message has its priority", () => {
  const format = withSyslogPrefix(getTextFormatter());
  assert.match(format(record("error", "one line")), /^<3>[^\n]*one line\n$/);
  const lines = format(record("warning", "first\nsecond\nthird")).split("\n");
  assert.equal(lines.length, 4);
  assert.match(lines[0]!, /^<4>.*first$/);
  assert.equal(lines[1], "<4>second");
  assert.equal(lines[2], "<4>third");
  assert.equal(lines[3], "", "one newline at the end, and no prefix after it");
  // journald also ends an entry at a NUL byte
  assert.match(format(record("info", "a\0b")), /^<6>.*a\0<6>b\n$/);
});

Deno.test("withSyslogPrefix() keeps a JSON record one line: journald stores it without the prefix", () => {
  const format = withSyslogPrefix(getJsonLinesFormatter());
  const text = format(record("debug", "multi\nline"));
  assert.ok(text.startsWith("<7>{"));
  assert.equal(text.indexOf("\n"), text.length - 1);
  assert.equal(JSON.parse(text.slice(3)).message, "multi\nline");
});

Deno.test("namesJournalStream() matches JOURNAL_STREAM's device and inode only when both equal stderr's", () => {
  const identity = { dev: 8n, ino: 123456789012n };
  assert.equal(namesJournalStream("8:123456789012", identity), true);
  assert.equal(namesJournalStream("8:123456789013", identity), false);
  assert.equal(namesJournalStream("9:123456789012", identity), false);
  assert.equal(namesJournalStream(undefined, identity), false);
  assert.equal(namesJournalStream("8:123456789012", undefined), false);
  for (const bad of ["", "8", "8:", ":1", "8:1:2", "x:1", " 8:123456789012", "-8:1"]) {
    assert.equal(namesJournalStream(bad, identity), false, bad);
  }
});

Deno.test("stderrIsJournal() is true only while JOURNAL_STREAM names this process's stderr", async () => {
  // a child whose stderr is a file: JOURNAL_STREAM naming that file's device and inode says yes,
  // naming any other file (a variable inherited from a service, stderr redirected since) says no
  const dir = await Deno.makeTempDir({ prefix: "keelson-journal-" });
  try {
    const stderrPath = `${dir}/stderr`;
    const other = `${dir}/other`;
    await Deno.writeTextFile(stderrPath, "");
    await Deno.writeTextFile(other, "");
    const module = new URL("../../../src/log/journal_stream.ts", import.meta.url).href;
    const answer = async (journalStream: string) => {
      const output = await new Deno.Command("bash", {
        args: [
          "-c",
          `exec "$0" eval "$1" 2>"$2"`,
          Deno.execPath(),
          `import { stderrIsJournal } from "${module}"; console.log(stderrIsJournal());`,
          stderrPath,
        ],
        cwd: new URL("../../../", import.meta.url).pathname,
        env: { JOURNAL_STREAM: journalStream, NO_COLOR: "1" },
        stdout: "piped",
      }).output();
      return new TextDecoder().decode(output.stdout).trim();
    };
    const id = async (path: string) => {
      const info = await Deno.stat(path);
      return `${info.dev}:${info.ino}`;
    };
    assert.equal(await answer(await id(stderrPath)), "true");
    assert.equal(await answer(await id(other)), "false");
    assert.equal(await answer(""), "false");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
