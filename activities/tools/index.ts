/** The agent's tools: types, confinement, the registry and the built-in tools. */
export * from './types';
export { resolveInside, type ResolveOptions } from './confine';
export { createToolRegistry, executeTool, type ToolRegistry } from './registry';
export { BUILT_IN_TOOLS, BUILT_IN_TOOL_NAMES, READ_TOOLS, READ_TOOL_NAMES, WRITE_TOOLS } from './built-in';
export { readFileTool, type ReadFileInput } from './read-file';
export { listFilesTool, type ListFilesInput } from './list-files';
export { searchTool, MAX_SEARCH_MATCHES, type SearchInput } from './search';
export { writeFileTool, type WriteFileInput } from './write-file';
export { editFileTool, type EditFileInput } from './edit-file';
export { runCommandTool, type RunCommandInput } from './run-command';
export { gitDiffTool, gitStatusTool, type NoInput } from './git';
export { splitCommand, matchAllowed } from './shell-words';
export { MAX_READ_BYTES, MAX_WRITE_BYTES } from './text-files';
export { resolveInsideAsync } from './confine';
