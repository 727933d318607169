// The failing variant: run with test_command "node --test failing/".
const { test } = require("node:test");
const assert = require("node:assert");

test("add is wrong on purpose", async () => {
  const response = await fetch("http://127.0.0.1:3000/add/2/2");
  assert.deepStrictEqual(await response.json(), { sum: 5 });
});

test("health still passes", async () => {
  const response = await fetch("http://127.0.0.1:3000/health");
  assert.strictEqual((await response.json()).status, "ok");
});
