"""The MCP server: the tool catalogue over stdio (`engram mcp`) and streamable HTTP (`/mcp`)."""
