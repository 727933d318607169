// Runs against the server Petri started (127.0.0.1:3000 in the same sandbox).
const { test } = require("node:test");
const assert = require("node:assert");

const BASE = "http://127.0.0.1:3000";

test("health", async () => {
  const response = await fetch(`${BASE}/health`);
  assert.deepStrictEqual(await response.json(), { status: "ok" });
});

test("add", async () => {
  const response = await fetch(`${BASE}/add/2/3`);
  assert.deepStrictEqual(await response.json(), { sum: 5 });
});
