"""The SSH transport: paramiko on plain OpenSSH, nothing installed on the host.

- transport.py: `SshTransport`, the connection with its SFTP client and exec channels
- target.py / config_file.py: where to connect (`user@host:port` or an alias from ~/.ssh/config,
  read without running anything from it)
- errors.py: the one place paramiko and socket errors become collector errors
- exec_channel.py, stat_batch.py: exec channels with deadlines, a long-lived remote `stat` process (perl, or sh)
- catchup.py, cursor.py, gzip_stream.py: streaming catch-up reads, plain or gzip-compressed
"""
