"""A small Flask service, tested through Petri's test mode (see README.md)."""

from flask import Flask, jsonify

app = Flask(__name__)


@app.get("/health")
def health():
    return jsonify(status="ok")


@app.get("/add/<int:a>/<int:b>")
def add(a: int, b: int):
    return jsonify(sum=a + b)


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=5000)
