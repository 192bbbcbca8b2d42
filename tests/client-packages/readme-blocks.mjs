// The fenced code blocks of a README in one language: the examples the package tests run.
import { readFileSync } from "node:fs";

/**
 * Every block fenced with ```<lang> in `path`, in order, with the line its code starts on.
 * @param {string} path
 * @param {string} lang
 * @returns {{ line: number, code: string }[]}
 */
export function readmeBlocks(path, lang) {
  const lines = readFileSync(path, "utf8").split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== "```" + lang) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end].trim() !== "```") end++;
    if (end === lines.length) throw new Error(`${path}:${i + 1}: unclosed \`\`\`${lang} block`);
    blocks.push({ line: start + 1, code: lines.slice(start, end).join("\n") + "\n" });
    i = end;
  }
  return blocks;
}
