// A small Express service, tested through Petri's test mode (see README.md).
const express = require("express");

const app = express();

app.get("/health", (req, res) => res.json({ status: "ok" }));

app.get("/add/:a/:b", (req, res) => {
  res.json({ sum: Number(req.params.a) + Number(req.params.b) });
});

app.listen(3000, "127.0.0.1", () => console.log("listening on 3000"));
