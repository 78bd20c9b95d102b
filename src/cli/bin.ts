#!/usr/bin/env node
const x: number = 1;
console.log("hello", x, process.version);
