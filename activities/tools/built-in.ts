import { editFileTool } from './edit-file';
import { gitDiffTool, gitStatusTool } from './git';
import { listFilesTool } from './list-files';
import { readFileTool } from './read-file';
import { runCommandTool } from './run-command';
import { searchTool } from './search';
import type { Tool } from './types';
import { writeFileTool } from './write-file';

/** Tools that only look at the workspace: read_file, list_files, search, git_diff, git_status. */
export const READ_TOOLS: Tool[] = [readFileTool, listFilesTool, searchTool, gitDiffTool, gitStatusTool];

/** Tools that change the workspace: write_file, edit_file, run_command. */
export const WRITE_TOOLS: Tool[] = [writeFileTool, editFileTool, runCommandTool];

/** Every built-in tool, read tools first. */
export const BUILT_IN_TOOLS: Tool[] = [...READ_TOOLS, ...WRITE_TOOLS];

/** Names of the read-only built-in tools, for loops that give a role only those. */
export const READ_TOOL_NAMES: string[] = READ_TOOLS.map((t) => t.name);

/** Names of every built-in tool. */
export const BUILT_IN_TOOL_NAMES: string[] = BUILT_IN_TOOLS.map((t) => t.name);
