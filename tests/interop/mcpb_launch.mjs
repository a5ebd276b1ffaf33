// How Claude Desktop launches a Desktop Extension: the official MCPB
// library's getMcpConfigForManifest (the loading code the desktop apps
// use) turns an unpacked bundle's manifest and the user's choices into the
// command, args and env to start. Prints them as JSON.
// usage: node mcpb_launch.mjs UNPACKED_DIR '{"policy": "/path"}'
import { readFileSync } from "node:fs";
import { getMcpConfigForManifest } from "@anthropic-ai/mcpb";

const [dir, userConfig] = process.argv.slice(2);
const manifest = JSON.parse(readFileSync(`${dir}/manifest.json`, "utf8"));
const config = await getMcpConfigForManifest({
  manifest,
  extensionPath: dir,
  systemDirs: { HOME: process.env.HOME, DESKTOP: `${process.env.HOME}/Desktop`, DOCUMENTS: `${process.env.HOME}/Documents`, DOWNLOADS: `${process.env.HOME}/Downloads` },
  userConfig: JSON.parse(userConfig || "{}"),
  pathSeparator: "/",
});
process.stdout.write(JSON.stringify(config ?? null));
