<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR" sourcelanguage="en">
<context>
    <name>forja::env::Finding</name>
    <message>
        <source>No NVIDIA driver was found (%1 and %2 did not load), so Forja runs on the CPU.</source>
        <translation>Nenhum driver NVIDIA foi encontrado (%1 e %2 não carregaram), então o Forja roda na CPU.</translation>
    </message>
    <message>
        <source>If this machine has an NVIDIA GPU, install the NVIDIA driver and reboot; otherwise there is nothing to do.</source>
        <translation>Se esta máquina tem uma GPU NVIDIA, instale o driver NVIDIA e reinicie; caso contrário, não há nada a fazer.</translation>
    </message>
    <message>
        <source>Reboot, or unload and reload the nvidia kernel modules, so that both are the same version.</source>
        <translation>Reinicie, ou descarregue e recarregue os módulos do kernel nvidia, para que os dois fiquem na mesma versão.</translation>
    </message>
    <message>
        <source>The loaded NVIDIA kernel module is %1 but the user-space driver is %2, so the GPU cannot be used (usually the driver was updated without a reboot).</source>
        <translation>O módulo do kernel NVIDIA carregado é %1, mas o driver de espaço de usuário é %2, então a GPU não pode ser usada (em geral o driver foi atualizado sem reiniciar).</translation>
    </message>
    <message>
        <source>The NVIDIA kernel module and the user-space driver are different versions (%1), so the GPU cannot be used.</source>
        <translation>O módulo do kernel NVIDIA e o driver de espaço de usuário estão em versões diferentes (%1), então a GPU não pode ser usada.</translation>
    </message>
    <message>
        <source>The NVIDIA driver libraries are installed but the driver did not start: %1.</source>
        <translation>As bibliotecas do driver NVIDIA estão instaladas, mas o driver não iniciou: %1.</translation>
    </message>
    <message>
        <source>Check that the GPU is seen (lspci | grep -i nvidia) and that the nvidia kernel module is loaded (sudo modprobe nvidia), or reboot after a driver install.</source>
        <translation>Verifique se a GPU aparece (lspci | grep -i nvidia) e se o módulo do kernel nvidia está carregado (sudo modprobe nvidia), ou reinicie depois de instalar o driver.</translation>
    </message>
    <message>
        <source>The NVIDIA driver is running but reports no GPU, so Forja runs on the CPU.</source>
        <translation>O driver NVIDIA está rodando, mas não informa nenhuma GPU, então o Forja roda na CPU.</translation>
    </message>
    <message>
        <source>Check that the GPU is seated and powered and that this container or VM was given it.</source>
        <translation>Verifique se a GPU está bem encaixada e alimentada e se este contêiner ou VM recebeu acesso a ela.</translation>
    </message>
    <message>
        <source>NVIDIA driver %1 supports CUDA up to %2, but this LibTorch uses CUDA %3, so CUDA will not start.</source>
        <translation>O driver NVIDIA %1 suporta CUDA até %2, mas esta LibTorch usa CUDA %3, então o CUDA não vai iniciar.</translation>
    </message>
    <message>
        <source>NVIDIA driver %1 supports CUDA up to %2, but this LibTorch uses CUDA %3; it runs through minor-version compatibility, but PTX JIT and newer features fail.</source>
        <translation>O driver NVIDIA %1 suporta CUDA até %2, mas esta LibTorch usa CUDA %3; ela roda pela compatibilidade entre versões menores, mas o JIT de PTX e os recursos mais novos falham.</translation>
    </message>
    <message>
        <source>NVIDIA driver %1 supports CUDA up to %2, but Forja&apos;s kernels were built with CUDA %3, so CUDA will not start.</source>
        <translation>O driver NVIDIA %1 suporta CUDA até %2, mas os kernels do Forja foram compilados com CUDA %3, então o CUDA não vai iniciar.</translation>
    </message>
    <message>
        <source>NVIDIA driver %1 supports CUDA up to %2, but Forja&apos;s kernels were built with CUDA %3; they run through minor-version compatibility, but PTX JIT and newer features fail.</source>
        <translation>O driver NVIDIA %1 suporta CUDA até %2, mas os kernels do Forja foram compilados com CUDA %3; eles rodam pela compatibilidade entre versões menores, mas o JIT de PTX e os recursos mais novos falham.</translation>
    </message>
    <message>
        <source>Install NVIDIA driver for CUDA %1, or use a build made for CUDA %2 or older.</source>
        <translation>Instale um driver NVIDIA para CUDA %1, ou use uma build feita para CUDA %2 ou anterior.</translation>
    </message>
    <message>
        <source>Install NVIDIA driver %1 or newer (the minimum for CUDA %2), or use a build made for CUDA %3 or older.</source>
        <translation>Instale o driver NVIDIA %1 ou mais novo (o mínimo para CUDA %2), ou use uma build feita para CUDA %3 ou anterior.</translation>
    </message>
    <message>
        <source>%1 has compute capability %2, which this LibTorch has no kernels for (it has %3).</source>
        <translation>%1 tem capacidade de computação %2, para a qual esta LibTorch não tem kernels (ela tem %3).</translation>
    </message>
    <message>
        <source>Use a LibTorch build that includes %1 (check its release notes for supported GPUs).</source>
        <translation>Use uma build da LibTorch que inclua %1 (veja nas notas de versão quais GPUs ela suporta).</translation>
    </message>
    <message>
        <source>%1 has compute capability %2, but Forja&apos;s own kernels were built only for %3.</source>
        <translation>%1 tem capacidade de computação %2, mas os kernels do próprio Forja foram compilados só para %3.</translation>
    </message>
    <message>
        <source>Reconfigure with -DCMAKE_CUDA_ARCHITECTURES=%1 (or native) and rebuild.</source>
        <translation>Reconfigure com -DCMAKE_CUDA_ARCHITECTURES=%1 (ou native) e compile de novo.</translation>
    </message>
    <message>
        <source>%1 has compute capability %2 and no bf16 support (that needs 8.0, Ampere, or newer).</source>
        <translation>%1 tem capacidade de computação %2 e não suporta bf16 (isso exige 8.0, Ampere, ou mais nova).</translation>
    </message>
    <message>
        <source>Train in fp16 with loss scaling (or fp32 for small models) instead of bf16.</source>
        <translation>Treine em fp16 com escala da perda (ou em fp32 para modelos pequenos) em vez de bf16.</translation>
    </message>
    <message>
        <source>THIS FORJA BUILD RUNS ON THE CPU ONLY: its LibTorch has no CUDA, even though %1 and others are present.</source>
        <translation>ESTA BUILD DO FORJA RODA SÓ NA CPU: a LibTorch dela não tem CUDA, embora %1 e outras estejam presentes.</translation>
    </message>
    <message>
        <source>THIS FORJA BUILD RUNS ON THE CPU ONLY: its LibTorch has no CUDA, even though %1 is present.</source>
        <translation>ESTA BUILD DO FORJA RODA SÓ NA CPU: a LibTorch dela não tem CUDA, embora %1 esteja presente.</translation>
    </message>
    <message>
        <source>Rebuild Forja with the cuda preset against a LibTorch that has CUDA (CMAKE_PREFIX_PATH pointing at it).</source>
        <translation>Compile o Forja de novo com o preset cuda contra uma LibTorch que tenha CUDA (CMAKE_PREFIX_PATH apontando para ela).</translation>
    </message>
    <message>
        <source>THE WORK WOULD RUN ON THE CPU: LibTorch has CUDA but cannot use %1 and others.</source>
        <translation>O TRABALHO RODARIA NA CPU: a LibTorch tem CUDA, mas não consegue usar %1 e as outras.</translation>
    </message>
    <message>
        <source>THE WORK WOULD RUN ON THE CPU: LibTorch has CUDA but cannot use %1.</source>
        <translation>O TRABALHO RODARIA NA CPU: a LibTorch tem CUDA, mas não consegue usar %1.</translation>
    </message>
    <message>
        <source>Fix the driver findings in this report, then run forja-cli doctor again until it says CUDA is available.</source>
        <translation>Corrija os problemas de driver deste relatório e rode forja-cli doctor de novo até ele dizer que o CUDA está disponível.</translation>
    </message>
    <message>
        <source>CUDA_VISIBLE_DEVICES=&quot;%1&quot; hides every GPU from CUDA, so Forja runs on the CPU.</source>
        <translation>CUDA_VISIBLE_DEVICES=&quot;%1&quot; esconde todas as GPUs do CUDA, então o Forja roda na CPU.</translation>
    </message>
    <message>
        <source>Unset CUDA_VISIBLE_DEVICES, or set it to the index or UUID of the GPU to use (e.g. 0).</source>
        <translation>Remova CUDA_VISIBLE_DEVICES, ou defina-a com o índice ou o UUID da GPU a usar (por exemplo, 0).</translation>
    </message>
    <message>
        <source>Stop that process, or choose another GPU with CUDA_VISIBLE_DEVICES, before training: Forja can use only what is free.</source>
        <translation>Encerre esse processo, ou escolha outra GPU com CUDA_VISIBLE_DEVICES, antes de treinar: o Forja só pode usar o que está livre.</translation>
    </message>
    <message>
        <source>Process %1 holds %2 of the %3 on %4.</source>
        <translation>O processo %1 ocupa %2 dos %3 da %4.</translation>
    </message>
    <message>
        <source>Process %1 (%2) holds %3 of the %4 on %5.</source>
        <translation>O processo %1 (%2) ocupa %3 dos %4 da %5.</translation>
    </message>
    <message>
        <source>%1 of the %2 on %3 is in use by processes this session cannot see (another container or user).</source>
        <translation>%1 dos %2 da %3 estão em uso por processos que esta sessão não vê (outro contêiner ou usuário).</translation>
    </message>
    <message>
        <source>Free that memory (nvidia-smi on the host shows who holds it) or choose another GPU.</source>
        <translation>Libere essa memória (nvidia-smi no host mostra quem a ocupa) ou escolha outra GPU.</translation>
    </message>
    <message>
        <source>MIG mode is on for %1 but no MIG instance exists, so CUDA has no device on it.</source>
        <translation>O modo MIG está ligado na %1, mas não existe nenhuma instância MIG, então o CUDA não tem dispositivo nela.</translation>
    </message>
    <message>
        <source>Create an instance (sudo nvidia-smi mig -i %1 -cgi &lt;profile&gt; -C) or turn MIG off (sudo nvidia-smi -i %1 -mig 0) and reset the GPU.</source>
        <translation>Crie uma instância (sudo nvidia-smi mig -i %1 -cgi &lt;perfil&gt; -C) ou desligue o MIG (sudo nvidia-smi -i %1 -mig 0) e reinicie a GPU.</translation>
    </message>
    <message>
        <source>LibTorch was built with cuDNN %1 but cuDNN %2 is loaded; convolutions may fail or be slow.</source>
        <translation>A LibTorch foi compilada com o cuDNN %1, mas o cuDNN %2 está carregado; convoluções podem falhar ou ficar lentas.</translation>
    </message>
    <message>
        <source>Put the cuDNN that came with this LibTorch first on the library path (or remove the other one).</source>
        <translation>Ponha o cuDNN que veio com esta LibTorch primeiro no caminho de bibliotecas (ou remova o outro).</translation>
    </message>
</context>
<context>
    <name>forja::ui::AboutDialog</name>
    <message>
        <source>About Forja</source>
        <translation>Sobre o Forja</translation>
    </message>
    <message>
        <source>&lt;h2&gt;Forja %1&lt;/h2&gt;&lt;p&gt;LoRA fine-tuning and chat for open language models on your own NVIDIA GPU, with no Python to install.&lt;/p&gt;&lt;p&gt;Free software under the GNU General Public License, version 3 or later.&lt;/p&gt;&lt;p&gt;&lt;a href=&quot;%2&quot;&gt;Documentation&lt;/a&gt;&lt;/p&gt;</source>
        <translation>&lt;h2&gt;Forja %1&lt;/h2&gt;&lt;p&gt;Ajuste fino com LoRA e chat para modelos de linguagem abertos na sua própria GPU NVIDIA, sem Python para instalar.&lt;/p&gt;&lt;p&gt;Software livre sob a Licença Pública Geral GNU, versão 3 ou posterior.&lt;/p&gt;&lt;p&gt;&lt;a href=&quot;%2&quot;&gt;Documentação&lt;/a&gt;&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Qt %1 · LibTorch and CUDA: asking…</source>
        <translation>Qt %1 · LibTorch e CUDA: consultando…</translation>
    </message>
    <message>
        <source>Qt %1 · LibTorch and CUDA: %2</source>
        <translation>Qt %1 · LibTorch e CUDA: %2</translation>
    </message>
    <message>
        <source>(not found)</source>
        <translation>(não encontrada)</translation>
    </message>
    <message>
        <source>CPU only</source>
        <translation>só CPU</translation>
    </message>
    <message>
        <source>CUDA %1</source>
        <translation>CUDA %1</translation>
    </message>
    <message>
        <source> · NVIDIA driver %1</source>
        <translation> · driver NVIDIA %1</translation>
    </message>
    <message>
        <source>Qt %1 · LibTorch %2 (%3)%4</source>
        <translation>Qt %1 · LibTorch %2 (%3)%4</translation>
    </message>
</context>
<context>
    <name>forja::ui::ChatPane</name>
    <message>
        <source>Chat</source>
        <translation>Chat</translation>
    </message>
    <message>
        <source>Open a model in the Model pane to chat with it.</source>
        <translation>Abra um modelo no painel Modelo para conversar com ele.</translation>
    </message>
    <message>
        <source>New Chat</source>
        <translation>Novo chat</translation>
    </message>
    <message>
        <source>Start a new conversation (%1)</source>
        <translation>Iniciar uma nova conversa (%1)</translation>
    </message>
    <message>
        <source>Delete…</source>
        <translation>Excluir…</translation>
    </message>
    <message>
        <source>Delete the selected chat and its messages (Del)</source>
        <translation>Excluir o chat selecionado e suas mensagens (Del)</translation>
    </message>
    <message>
        <source>Chats</source>
        <translation>Chats</translation>
    </message>
    <message>
        <source>Your conversation appears here.</source>
        <translation>Sua conversa aparece aqui.</translation>
    </message>
    <message>
        <source>Base model</source>
        <translation>Modelo base</translation>
    </message>
    <message>
        <source>Fine-tuned (adapter on)</source>
        <translation>Ajustado (adaptador ligado)</translation>
    </message>
    <message>
        <source>Message (Enter sends, Shift+Enter starts a new line)</source>
        <translation>Mensagem (Enter envia, Shift+Enter quebra a linha)</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>Enviar</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>Parar</translation>
    </message>
    <message>
        <source>Stop the answer here; what was written so far stays</source>
        <translation>Parar a resposta aqui; o que já foi escrito permanece</translation>
    </message>
    <message>
        <source>Compare base vs fine-tuned</source>
        <translation>Comparar base e ajustado</translation>
    </message>
    <message>
        <source>Answer the next message with the adapter off and on, side by side, and score each answer under both models. The answers do not join the conversation.</source>
        <translation>Responder à próxima mensagem com o adaptador desligado e ligado, lado a lado, e pontuar cada resposta nos dois modelos. As respostas não entram na conversa.</translation>
    </message>
    <message>
        <source>Optional: how the assistant should behave</source>
        <translation>Opcional: como o assistente deve se comportar</translation>
    </message>
    <message>
        <source>0 always picks the most likely token (greedy); higher is more varied</source>
        <translation>0 sempre escolhe o token mais provável (greedy); valores maiores dão mais variedade</translation>
    </message>
    <message>
        <source>Sample only from the most likely tokens that together have this probability; 1 is off</source>
        <translation>Amostrar só entre os tokens mais prováveis que, juntos, somam esta probabilidade; 1 desliga</translation>
    </message>
    <message>
        <source>off</source>
        <translation>desligado</translation>
    </message>
    <message>
        <source>Sample only from this many most likely tokens; 0 is off</source>
        <translation>Amostrar só entre esta quantidade de tokens mais prováveis; 0 desliga</translation>
    </message>
    <message>
        <source>Above 1 makes tokens already in the conversation less likely</source>
        <translation>Acima de 1, torna menos prováveis os tokens que já estão na conversa</translation>
    </message>
    <message>
        <source>The same seed, message and settings give the same answer</source>
        <translation>A mesma semente, mensagem e configurações dão a mesma resposta</translation>
    </message>
    <message>
        <source>No adapter: answers come from the base model.</source>
        <translation>Sem adaptador: as respostas vêm do modelo base.</translation>
    </message>
    <message>
        <source>Adapter on</source>
        <translation>Adaptador ligado</translation>
    </message>
    <message>
        <source>Switch the fine-tuning off and on without reloading</source>
        <translation>Desligar e ligar o ajuste fino sem recarregar</translation>
    </message>
    <message>
        <source>4-bit base (NF4)</source>
        <translation>Base em 4 bits (NF4)</translation>
    </message>
    <message>
        <source>Quantize the base model&apos;s projections to 4 bits as it loads (QLoRA&apos;s NF4): about a quarter of the memory for the weights, slightly different answers. Reloads the model; the conversation is kept.</source>
        <translation>Quantizar as projeções do modelo base para 4 bits ao carregar (NF4 do QLoRA): cerca de um quarto da memória para os pesos, respostas ligeiramente diferentes. Recarrega o modelo; a conversa é mantida.</translation>
    </message>
    <message>
        <source>Load Adapter…</source>
        <translation>Carregar adaptador…</translation>
    </message>
    <message>
        <source>System prompt:</source>
        <translation>Prompt de sistema:</translation>
    </message>
    <message>
        <source>Temperature:</source>
        <translation>Temperatura:</translation>
    </message>
    <message>
        <source>Top-p:</source>
        <translation>Top-p:</translation>
    </message>
    <message>
        <source>Top-k:</source>
        <translation>Top-k:</translation>
    </message>
    <message>
        <source>Max new tokens:</source>
        <translation>Máx. de tokens novos:</translation>
    </message>
    <message>
        <source>Repetition penalty:</source>
        <translation>Penalidade de repetição:</translation>
    </message>
    <message>
        <source>Seed:</source>
        <translation>Semente:</translation>
    </message>
    <message>
        <source>Base weights:</source>
        <translation>Pesos da base:</translation>
    </message>
    <message>
        <source>Adapter</source>
        <translation>Adaptador</translation>
    </message>
    <message>
        <source>Adapter on: answers come from the fine-tuned model.</source>
        <translation>Adaptador ligado: as respostas vêm do modelo ajustado.</translation>
    </message>
    <message>
        <source>Adapter off: answers come from the base model.</source>
        <translation>Adaptador desligado: as respostas vêm do modelo base.</translation>
    </message>
    <message>
        <source>Adapter %1 loads with the model.</source>
        <translation>O adaptador %1 é carregado com o modelo.</translation>
    </message>
    <message>
        <source>Open a LoRA adapter folder (adapter_config.json)</source>
        <translation>Abrir uma pasta de adaptador LoRA (adapter_config.json)</translation>
    </message>
    <message>
        <source>%1 — %2</source>
        <translation>%1 — %2</translation>
    </message>
    <message>
        <source>Could not load %1</source>
        <translation>Não foi possível carregar %1</translation>
    </message>
    <message>
        <source>Adapter: %1</source>
        <translation>Adaptador: %1</translation>
    </message>
    <message>
        <source>%1 — loads when this pane is shown.</source>
        <translation>%1 — carrega quando este painel for exibido.</translation>
    </message>
    <message>
        <source>Loading %1…</source>
        <translation>Carregando %1…</translation>
    </message>
    <message>
        <source>Loading adapter %1…</source>
        <translation>Carregando o adaptador %1…</translation>
    </message>
    <message>
        <source>Writing…</source>
        <translation>Escrevendo…</translation>
    </message>
    <message>
        <source>Stopping…</source>
        <translation>Parando…</translation>
    </message>
    <message>
        <source>(stopped)</source>
        <translation>(interrompida)</translation>
    </message>
    <message numerus="yes">
        <source>%n token(s); mean log-prob per token: %1 under the base model, %2 with the adapter</source>
        <translation>
            <numerusform>%n token; log-prob média por token: %1 no modelo base, %2 com o adaptador</numerusform>
            <numerusform>%n tokens; log-prob média por token: %1 no modelo base, %2 com o adaptador</numerusform>
        </translation>
    </message>
    <message>
        <source>Base: %1
Fine-tuned: %2</source>
        <translation>Base: %1
Ajustado: %2</translation>
    </message>
    <message>
        <source>Chats are not saved: %1</source>
        <translation>Os chats não estão sendo salvos: %1</translation>
    </message>
    <message>
        <source>This chat was with %1; new answers come from the model open now.</source>
        <translation>Este chat foi com %1; as novas respostas vêm do modelo aberto agora.</translation>
    </message>
    <message>
        <source>Delete chat</source>
        <translation>Excluir chat</translation>
    </message>
    <message>
        <source>Delete the chat “%1” and its messages?</source>
        <translation>Excluir o chat “%1” e suas mensagens?</translation>
    </message>
    <message>
        <source>%1
%2</source>
        <translation>%1
%2</translation>
    </message>
    <message>
        <source>This chat could not be saved: %1</source>
        <translation>Não foi possível salvar este chat: %1</translation>
    </message>
    <message>
        <source>You</source>
        <translation>Você</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>Assistente</translation>
    </message>
    <message numerus="yes">
        <source>%n token(s)</source>
        <translation>
            <numerusform>%n token</numerusform>
            <numerusform>%n tokens</numerusform>
        </translation>
    </message>
    <message>
        <source>%1 tokens/s</source>
        <translation>%1 tokens/s</translation>
    </message>
    <message>
        <source>first token after %1 ms</source>
        <translation>primeiro token após %1 ms</translation>
    </message>
    <message>
        <source>%1 of %2 prompt tokens reused</source>
        <translation>%1 de %2 tokens do prompt reaproveitados</translation>
    </message>
    <message>
        <source>ended: end of text</source>
        <translation>terminou: fim do texto</translation>
    </message>
    <message>
        <source>ended: end of turn</source>
        <translation>terminou: fim do turno</translation>
    </message>
    <message>
        <source>ended: stop string</source>
        <translation>terminou: string de parada</translation>
    </message>
    <message>
        <source>ended: max new tokens reached</source>
        <translation>terminou: limite de tokens novos atingido</translation>
    </message>
    <message>
        <source>ended: the context is full</source>
        <translation>terminou: o contexto está cheio</translation>
    </message>
    <message>
        <source>stopped by you</source>
        <translation>interrompida por você</translation>
    </message>
    <message>
        <source>context %1 of %2 tokens</source>
        <translation>contexto: %1 de %2 tokens</translation>
    </message>
    <message>
        <source>Search chats</source>
        <translation>Buscar conversas</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>Exportar…</translation>
    </message>
    <message>
        <source>Save the conversation as Markdown, or as a line of chat training data</source>
        <translation>Salvar a conversa em Markdown, ou como uma linha de dados de treino de chat</translation>
    </message>
    <message>
        <source>Markdown…</source>
        <translation>Markdown…</translation>
    </message>
    <message>
        <source>Export chat as Markdown</source>
        <translation>Exportar conversa em Markdown</translation>
    </message>
    <message>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <source>Training data (JSONL)…</source>
        <translation>Dados de treino (JSONL)…</translation>
    </message>
    <message>
        <source>Export chat as training data</source>
        <translation>Exportar conversa como dados de treino</translation>
    </message>
    <message>
        <source>JSON Lines (*.jsonl)</source>
        <translation>JSON Lines (*.jsonl)</translation>
    </message>
    <message>
        <source>This chat has no finished exchange to export as training data.</source>
        <translation>Esta conversa não tem nenhuma troca concluída para exportar como dados de treino.</translation>
    </message>
    <message>
        <source>Send a message and let the answer finish, then export again.</source>
        <translation>Envie uma mensagem, deixe a resposta terminar e exporte de novo.</translation>
    </message>
    <message>
        <source>Choose another file or folder.</source>
        <translation>Escolha outro arquivo ou pasta.</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>Gerar de novo</translation>
    </message>
    <message>
        <source>Answer the last message again</source>
        <translation>Responder de novo à última mensagem</translation>
    </message>
    <message>
        <source>Edit</source>
        <translation>Editar</translation>
    </message>
    <message>
        <source>Take the last message back into the message box, to change it and send again</source>
        <translation>Trazer a última mensagem de volta à caixa de mensagem, para mudá-la e enviar de novo</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>Copiar</translation>
    </message>
    <message>
        <source>Copy the last answer</source>
        <translation>Copiar a última resposta</translation>
    </message>
    <message>
        <source>Copy code</source>
        <translation>Copiar código</translation>
    </message>
    <message>
        <source>Adapter: run “%1”</source>
        <translation>Adaptador: execução “%1”</translation>
    </message>
</context>
<context>
    <name>forja::ui::ChatWorker</name>
    <message>
        <source>This is an error Forja did not expect. Please report it with the steps that led to it.</source>
        <translation>Este é um erro que o Forja não esperava. Por favor, relate-o com os passos que levaram a ele.</translation>
    </message>
    <message>
        <source>%1 on %2 (%3), context %4 tokens</source>
        <translation>%1 em %2 (%3), contexto de %4 tokens</translation>
    </message>
    <message>
        <source>, 4-bit base (NF4)</source>
        <translation>, base em 4 bits (NF4)</translation>
    </message>
    <message>
        <source>No model is loaded to put the adapter on.</source>
        <translation>Nenhum modelo carregado para aplicar o adaptador.</translation>
    </message>
    <message>
        <source>Open the adapter&apos;s base model in the Model pane first.</source>
        <translation>Primeiro abra o modelo base do adaptador no painel Modelo.</translation>
    </message>
    <message>
        <source>No model is loaded.</source>
        <translation>Nenhum modelo carregado.</translation>
    </message>
    <message>
        <source>Open a model folder in the Model pane, then chat here.</source>
        <translation>Abra uma pasta de modelo no painel Modelo e depois converse aqui.</translation>
    </message>
    <message>
        <source>Comparing needs a model with an adapter.</source>
        <translation>A comparação precisa de um modelo com adaptador.</translation>
    </message>
    <message>
        <source>Load a fine-tuned adapter (Load Adapter… or a finished run) first.</source>
        <translation>Primeiro carregue um adaptador ajustado (Carregar adaptador… ou uma execução concluída).</translation>
    </message>
</context>
<context>
    <name>forja::ui::DataPane</name>
    <message>
        <source>Training data</source>
        <translation>Dados de treino</translation>
    </message>
    <message>
        <source>Open Dataset…</source>
        <translation>Abrir conjunto de dados…</translation>
    </message>
    <message>
        <source>JSONL or JSON files: alpaca (instruction / input / output), chat (messages), ShareGPT (conversations) or plain text (text).</source>
        <translation>Arquivos JSONL ou JSON: alpaca (instruction / input / output), chat (messages), ShareGPT (conversations) ou texto simples (text).</translation>
    </message>
    <message>
        <source> tokens</source>
        <translation> tokens</translation>
    </message>
    <message>
        <source>Skip bad lines (and list them)</source>
        <translation>Pular linhas inválidas (e listá-las)</translation>
    </message>
    <message>
        <source>Train on the prompt too</source>
        <translation>Treinar também no prompt</translation>
    </message>
    <message>
        <source>Format:</source>
        <translation>Formato:</translation>
    </message>
    <message>
        <source>Max length:</source>
        <translation>Comprimento máx.:</translation>
    </message>
    <message>
        <source>Held out for eval:</source>
        <translation>Reservado para avaliação:</translation>
    </message>
    <message>
        <source>tokens per example</source>
        <translation>tokens por exemplo</translation>
    </message>
    <message>
        <source>examples</source>
        <translation>exemplos</translation>
    </message>
    <message>
        <source>Where</source>
        <translation>Onde</translation>
    </message>
    <message>
        <source>Problem</source>
        <translation>Problema</translation>
    </message>
    <message>
        <source>Example</source>
        <translation>Exemplo</translation>
    </message>
    <message>
        <source>Highlighted tokens carry the loss: the model learns to produce them.</source>
        <translation>Os tokens destacados entram na perda: o modelo aprende a produzi-los.</translation>
    </message>
    <message>
        <source>Open a dataset</source>
        <translation>Abrir um conjunto de dados</translation>
    </message>
    <message>
        <source>Datasets (*.jsonl *.json);;All files (*)</source>
        <translation>Conjuntos de dados (*.jsonl *.json);;Todos os arquivos (*)</translation>
    </message>
    <message>
        <source>Reading %1…</source>
        <translation>Lendo %1…</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1 records&lt;/b&gt; read (alpaca %2, chat %3, ShareGPT %4, text %5), %6 skipped.&lt;br&gt;&lt;b&gt;Train:&lt;/b&gt; %7 examples, %8 tokens, %9 trained; length %10–%11 (mean %12).&lt;br&gt;&lt;b&gt;Eval:&lt;/b&gt; %13 examples, %14 tokens.&lt;br&gt;%15 cut to the max length; %16 dropped with nothing to learn.</source>
        <translation>&lt;b&gt;%1 registros&lt;/b&gt; lidos (alpaca %2, chat %3, ShareGPT %4, texto %5), %6 pulados.&lt;br&gt;&lt;b&gt;Treino:&lt;/b&gt; %7 exemplos, %8 tokens, %9 treinados; comprimento %10–%11 (média %12).&lt;br&gt;&lt;b&gt;Avaliação:&lt;/b&gt; %13 exemplos, %14 tokens.&lt;br&gt;%15 cortados no comprimento máximo; %16 descartados por não terem nada a aprender.</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1 records&lt;/b&gt; read, %2 skipped.&lt;br&gt;%3</source>
        <translation>&lt;b&gt;%1 registros&lt;/b&gt; lidos, %2 pulados.&lt;br&gt;%3</translation>
    </message>
    <message>
        <source>%1 — %2 tokens, %3 trained%4</source>
        <translation>%1 — %2 tokens, %3 treinados%4</translation>
    </message>
    <message>
        <source>, cut from %1</source>
        <translation>, cortado de %1</translation>
    </message>
    <message>
        <source>train examples</source>
        <translation>exemplos de treino</translation>
    </message>
    <message>
        <source>Data</source>
        <translation>Dados</translation>
    </message>
    <message numerus="yes">
        <source>max length %1: %n cut</source>
        <translation>
            <numerusform>comprimento máximo %1: %n cortado</numerusform>
            <numerusform>comprimento máximo %1: %n cortados</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>forja::ui::DoctorJob</name>
    <message>
        <source>Checking the GPU setup</source>
        <translation>Verificando a configuração da GPU</translation>
    </message>
</context>
<context>
    <name>forja::ui::DoctorPane</name>
    <message>
        <source>Is this machine ready to fine-tune?</source>
        <translation>Esta máquina está pronta para ajuste fino?</translation>
    </message>
    <message>
        <source>Check Again</source>
        <translation>Verificar de novo</translation>
    </message>
    <message>
        <source>Copy Report</source>
        <translation>Copiar relatório</translation>
    </message>
    <message>
        <source>Copy the full report, e.g. for a bug report</source>
        <translation>Copiar o relatório completo, por exemplo para relatar um bug</translation>
    </message>
    <message>
        <source>Not checked yet.</source>
        <translation>Ainda não verificado.</translation>
    </message>
    <message>
        <source>What is wrong</source>
        <translation>O que está errado</translation>
    </message>
    <message>
        <source>What to do</source>
        <translation>O que fazer</translation>
    </message>
    <message>
        <source>Checking the NVIDIA driver, the GPUs, CUDA and LibTorch…</source>
        <translation>Verificando o driver NVIDIA, as GPUs, o CUDA e a LibTorch…</translation>
    </message>
    <message>
        <source>&lt;b&gt;The check itself failed:&lt;/b&gt; %1&lt;br&gt;%2</source>
        <translation>&lt;b&gt;A própria verificação falhou:&lt;/b&gt; %1&lt;br&gt;%2</translation>
    </message>
    <message>
        <source>the GPU %1 (cuda:0)</source>
        <translation>GPU %1 (cuda:0)</translation>
    </message>
    <message>
        <source>the GPU cuda:0</source>
        <translation>GPU cuda:0</translation>
    </message>
    <message>
        <source>the CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>no CUDA GPU is visible to this build.</source>
        <translation>nenhuma GPU CUDA está visível para esta compilação.</translation>
    </message>
    <message>
        <source>&lt;b&gt;Training and chat will run on %1.&lt;/b&gt;</source>
        <translation>&lt;b&gt;O treino e o chat vão rodar na %1.&lt;/b&gt;</translation>
    </message>
    <message>
        <source>Why: %1</source>
        <translation>Motivo: %1</translation>
    </message>
    <message>
        <source>No problems found.</source>
        <translation>Nenhum problema encontrado.</translation>
    </message>
    <message numerus="yes">
        <source>Nothing to fix; %n note(s) below.</source>
        <translation>
            <numerusform>Nada a corrigir; %n observação abaixo.</numerusform>
            <numerusform>Nada a corrigir; %n observações abaixo.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n problem(s) to fix</source>
        <translation>
            <numerusform>%n problema a corrigir</numerusform>
            <numerusform>%n problemas a corrigir</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n warning(s)</source>
        <translation>
            <numerusform>%n aviso</numerusform>
            <numerusform>%n avisos</numerusform>
        </translation>
    </message>
    <message>
        <source>Nothing to fix.</source>
        <translation>Nada a corrigir.</translation>
    </message>
    <message>
        <source>Doctor</source>
        <translation>Diagnóstico</translation>
    </message>
</context>
<context>
    <name>forja::ui::ExportDialog</name>
    <message>
        <source>GGUF file (llama.cpp, LM Studio)</source>
        <translation>Arquivo GGUF (llama.cpp, LM Studio)</translation>
    </message>
    <message>
        <source>Ollama folder (GGUF and Modelfile)</source>
        <translation>Pasta do Ollama (GGUF e Modelfile)</translation>
    </message>
    <message>
        <source>GGUF LoRA adapter (llama.cpp --lora)</source>
        <translation>Adaptador LoRA em GGUF (llama.cpp --lora)</translation>
    </message>
    <message>
        <source>Hugging Face folder (transformers)</source>
        <translation>Pasta do Hugging Face (transformers)</translation>
    </message>
    <message>
        <source>F32 (full precision)</source>
        <translation>F32 (precisão total)</translation>
    </message>
    <message>
        <source>F16</source>
        <translation>F16</translation>
    </message>
    <message>
        <source>BF16</source>
        <translation>BF16</translation>
    </message>
    <message>
        <source>Q8_0 (near lossless)</source>
        <translation>Q8_0 (quase sem perda)</translation>
    </message>
    <message>
        <source>Q6_K</source>
        <translation>Q6_K</translation>
    </message>
    <message>
        <source>Q5_K_M</source>
        <translation>Q5_K_M</translation>
    </message>
    <message>
        <source>Q4_K_M (the usual choice)</source>
        <translation>Q4_K_M (a escolha comum)</translation>
    </message>
    <message>
        <source>Q4_0 (smallest)</source>
        <translation>Q4_0 (o menor)</translation>
    </message>
    <message>
        <source>Export “%1”</source>
        <translation>Exportar “%1”</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>Procurar…</translation>
    </message>
    <message>
        <source>Export to</source>
        <translation>Exportar para</translation>
    </message>
    <message>
        <source>GGUF files (*.gguf)</source>
        <translation>Arquivos GGUF (*.gguf)</translation>
    </message>
    <message>
        <source>Export to a new folder</source>
        <translation>Exportar para uma pasta nova</translation>
    </message>
    <message>
        <source>Format:</source>
        <translation>Formato:</translation>
    </message>
    <message>
        <source>Type:</source>
        <translation>Tipo:</translation>
    </message>
    <message>
        <source>Destination:</source>
        <translation>Destino:</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>Exportar</translation>
    </message>
    <message>
        <source>about %1</source>
        <translation>cerca de %1</translation>
    </message>
    <message>
        <source>The adapter alone, beside the base model&apos;s own GGUF file: llama.cpp --lora, Ollama&apos;s ADAPTER.</source>
        <translation>Só o adaptador, ao lado do arquivo GGUF do próprio modelo base: llama.cpp --lora, ADAPTER do Ollama.</translation>
    </message>
    <message>
        <source>The adapter merged into the base model, in the checkpoint&apos;s own dtype, as transformers loads it.</source>
        <translation>O adaptador mesclado ao modelo base, no dtype do próprio checkpoint, como o transformers o carrega.</translation>
    </message>
    <message>
        <source>model.gguf and a Modelfile with the chat template: ollama create NAME -f Modelfile.</source>
        <translation>model.gguf e um Modelfile com o template de chat: ollama create NOME -f Modelfile.</translation>
    </message>
    <message>
        <source>The adapter merged into the base model, one file for llama.cpp, LM Studio and Ollama.</source>
        <translation>O adaptador mesclado ao modelo base, um arquivo para llama.cpp, LM Studio e Ollama.</translation>
    </message>
</context>
<context>
    <name>forja::ui::ExportJob</name>
    <message>
        <source>Exporting model</source>
        <translation>Exportando o modelo</translation>
    </message>
    <message>
        <source>loading the base model</source>
        <translation>carregando o modelo base</translation>
    </message>
    <message>
        <source>merging the adapter</source>
        <translation>mesclando o adaptador</translation>
    </message>
    <message>
        <source>writing %1</source>
        <translation>gravando %1</translation>
    </message>
</context>
<context>
    <name>forja::ui::Format</name>
    <message>
        <source>%1 B</source>
        <comment>bytes</comment>
        <translation>%1 B</translation>
    </message>
    <message>
        <source>%1 B</source>
        <comment>billions</comment>
        <translation>%1 bi</translation>
    </message>
    <message>
        <source>%1 M</source>
        <comment>millions</comment>
        <translation>%1 mi</translation>
    </message>
    <message>
        <source>%1 K</source>
        <comment>thousands</comment>
        <translation>%1 mil</translation>
    </message>
    <message>
        <source>%1 s</source>
        <comment>seconds</comment>
        <translation>%1 s</translation>
    </message>
    <message>
        <source>%1 min %2 s</source>
        <comment>minutes and seconds</comment>
        <translation>%1 min %2 s</translation>
    </message>
    <message>
        <source>%1 h %2 min</source>
        <comment>hours and minutes</comment>
        <translation>%1 h %2 min</translation>
    </message>
</context>
<context>
    <name>forja::ui::GpuPane</name>
    <message>
        <source>GPU memory and utilization, live</source>
        <translation>Memória e uso da GPU, ao vivo</translation>
    </message>
    <message>
        <source> ms</source>
        <translation> ms</translation>
    </message>
    <message>
        <source>How often the GPUs are sampled</source>
        <translation>Com que frequência as GPUs são amostradas</translation>
    </message>
    <message>
        <source>Sample every</source>
        <translation>Amostrar a cada</translation>
    </message>
    <message>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <source>Process</source>
        <translation>Processo</translation>
    </message>
    <message>
        <source>GPU memory</source>
        <translation>Memória da GPU</translation>
    </message>
    <message>
        <source>No NVIDIA driver could be read, so there is nothing to plot: %1</source>
        <translation>Não foi possível ler nenhum driver NVIDIA, então não há nada para plotar: %1</translation>
    </message>
    <message>
        <source>the monitor is off</source>
        <translation>o monitor está desligado</translation>
    </message>
    <message>
        <source>On a machine with an NVIDIA GPU, install the NVIDIA driver; the Doctor pane says what is missing.</source>
        <translation>Em uma máquina com GPU NVIDIA, instale o driver NVIDIA; o painel Diagnóstico diz o que está faltando.</translation>
    </message>
    <message>
        <source>GPU %1</source>
        <translation>GPU %1</translation>
    </message>
    <message>
        <source>GPU %1 · %2</source>
        <translation>GPU %1 · %2</translation>
    </message>
    <message>
        <source>memory used (GiB)</source>
        <translation>memória usada (GiB)</translation>
    </message>
    <message>
        <source>utilization (%)</source>
        <translation>uso (%)</translation>
    </message>
    <message>
        <source>seconds</source>
        <translation>segundos</translation>
    </message>
    <message>
        <source>GiB</source>
        <translation>GiB</translation>
    </message>
    <message>
        <source>%</source>
        <translation>%</translation>
    </message>
    <message>
        <source>cuda:%1 allocated %2, reserved %3, peak %4</source>
        <translation>cuda:%1 alocado %2, reservado %3, pico %4</translation>
    </message>
    <message>
        <source>Forja&apos;s own allocator: no CUDA memory in use by this window.</source>
        <translation>Alocador do próprio Forja: nenhuma memória CUDA em uso por esta janela.</translation>
    </message>
    <message>
        <source>Forja&apos;s own allocator: %1</source>
        <translation>Alocador do próprio Forja: %1</translation>
    </message>
    <message>
        <source>(not visible)</source>
        <translation>(não visível)</translation>
    </message>
    <message>
        <source>not reported</source>
        <translation>não informado</translation>
    </message>
</context>
<context>
    <name>forja::ui::GpuStatusWidget</name>
    <message>
        <source>No GPU</source>
        <translation>Sem GPU</translation>
    </message>
    <message>
        <source>GPU: waiting for the first sample</source>
        <translation>GPU: aguardando a primeira amostra</translation>
    </message>
    <message>
        <source>GPU%1 %2 / %3</source>
        <translation>GPU%1 %2 / %3</translation>
    </message>
    <message>
        <source> · %1%</source>
        <translation> · %1%</translation>
    </message>
</context>
<context>
    <name>forja::ui::HubCacheJob</name>
    <message>
        <source>Reading the model cache</source>
        <translation>Lendo o cache de modelos</translation>
    </message>
    <message>
        <source>Deleting %1</source>
        <translation>Excluindo %1</translation>
    </message>
</context>
<context>
    <name>forja::ui::HubDownloadDialog</name>
    <message>
        <source>Download from Hugging Face</source>
        <translation>Baixar do Hugging Face</translation>
    </message>
    <message>
        <source>A branch, a tag or a commit</source>
        <translation>Um branch, uma tag ou um commit</translation>
    </message>
    <message>
        <source>Repository:</source>
        <translation>Repositório:</translation>
    </message>
    <message>
        <source>Revision:</source>
        <translation>Revisão:</translation>
    </message>
    <message>
        <source>Check</source>
        <translation>Verificar</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>Baixar</translation>
    </message>
    <message>
        <source>Cancel download</source>
        <translation>Cancelar download</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>Fechar</translation>
    </message>
    <message>
        <source>The download of %1 did not finish: Check, then Download resumes it.</source>
        <translation>O download de %1 não terminou: clique em Verificar e depois em Baixar para retomá-lo.</translation>
    </message>
    <message>
        <source>Asking %1…</source>
        <translation>Consultando %1…</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1&lt;/b&gt; at commit %2&lt;br&gt;%3&lt;br&gt;%4 file(s), %5; %6 to download, %7 free in the cache.%8</source>
        <translation>&lt;b&gt;%1&lt;/b&gt; no commit %2&lt;br&gt;%3&lt;br&gt;%4 arquivo(s), %5; %6 a baixar, %7 livres no cache.%8</translation>
    </message>
    <message>
        <source>Forja loads it (%1).</source>
        <translation>O Forja consegue carregá-lo (%1).</translation>
    </message>
    <message>
        <source>Forja cannot load it: %1</source>
        <translation>O Forja não consegue carregá-lo: %1</translation>
    </message>
    <message>
        <source>Not enough disk space for this download</source>
        <translation>Espaço em disco insuficiente para este download</translation>
    </message>
    <message>
        <source>Free some space, or set HF_HUB_CACHE to a folder on a larger disk.</source>
        <translation>Libere espaço ou defina HF_HUB_CACHE para uma pasta em um disco maior.</translation>
    </message>
    <message>
        <source>Downloading…</source>
        <translation>Baixando…</translation>
    </message>
    <message>
        <source>Downloaded to %1</source>
        <translation>Baixado em %1</translation>
    </message>
    <message>
        <source>Cancelled. What was downloaded is kept: Download resumes it.</source>
        <translation>Cancelado. O que já foi baixado é mantido: Baixar retoma o download.</translation>
    </message>
</context>
<context>
    <name>forja::ui::HubPlanJob</name>
    <message>
        <source>Asking the Hub about %1</source>
        <translation>Consultando o Hub sobre %1</translation>
    </message>
    <message>
        <source>reading the file list</source>
        <translation>lendo a lista de arquivos</translation>
    </message>
</context>
<context>
    <name>forja::ui::HubPullJob</name>
    <message>
        <source>Downloading %1</source>
        <translation>Baixando %1</translation>
    </message>
    <message>
        <source>%1 — %2/s</source>
        <translation>%1 — %2/s</translation>
    </message>
</context>
<context>
    <name>forja::ui::InspectModelJob</name>
    <message>
        <source>Reading model folder</source>
        <translation>Lendo a pasta do modelo</translation>
    </message>
</context>
<context>
    <name>forja::ui::Job</name>
    <message>
        <source>This is an error Forja did not expect. Please report it with the steps that led to it.</source>
        <translation>Este é um erro que o Forja não esperava. Por favor, relate-o com os passos que levaram a ele.</translation>
    </message>
    <message>
        <source>%1 stopped with an unknown error.</source>
        <translation>%1 parou com um erro desconhecido.</translation>
    </message>
</context>
<context>
    <name>forja::ui::JobMonitor</name>
    <message>
        <source> — %1%</source>
        <translation> — %1%</translation>
    </message>
    <message>
        <source> (+%1 more)</source>
        <translation> (e mais %1)</translation>
    </message>
</context>
<context>
    <name>forja::ui::JobStatusWidget</name>
    <message>
        <source>Cancel</source>
        <translation>Cancelar</translation>
    </message>
    <message>
        <source>Stop the running job</source>
        <translation>Parar a tarefa em andamento</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>Pronto</translation>
    </message>
</context>
<context>
    <name>forja::ui::MainWindow</name>
    <message>
        <source>Forja</source>
        <translation>Forja</translation>
    </message>
    <message>
        <source>%1 — Forja</source>
        <translation>%1 — Forja</translation>
    </message>
    <message>
        <source>Demo</source>
        <translation>Demonstração</translation>
    </message>
    <message>
        <source>The demo files (resources/demo) are not installed with this copy of Forja.</source>
        <translation>Os arquivos da demonstração (resources/demo) não estão instalados nesta cópia do Forja.</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>&amp;Arquivo</translation>
    </message>
    <message>
        <source>&amp;Open Model Folder…</source>
        <translation>&amp;Abrir pasta de modelo…</translation>
    </message>
    <message>
        <source>Ctrl+O</source>
        <translation>Ctrl+O</translation>
    </message>
    <message>
        <source>Open &amp;Recent</source>
        <translation>Abrir &amp;recentes</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>&amp;Sair</translation>
    </message>
    <message>
        <source>Ctrl+Q</source>
        <translation>Ctrl+Q</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>&amp;Exibir</translation>
    </message>
    <message>
        <source>Ctrl+%1</source>
        <translation>Ctrl+%1</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>Aj&amp;uda</translation>
    </message>
    <message>
        <source>&amp;About Forja</source>
        <translation>&amp;Sobre o Forja</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>&amp;Configurações…</translation>
    </message>
    <message>
        <source>Ctrl+,</source>
        <translation>Ctrl+,</translation>
    </message>
</context>
<context>
    <name>forja::ui::ModelPane</name>
    <message>
        <source>No model open</source>
        <translation>Nenhum modelo aberto</translation>
    </message>
    <message>
        <source>Open Model Folder…</source>
        <translation>Abrir pasta de modelo…</translation>
    </message>
    <message>
        <source>Try the Demo</source>
        <translation>Experimentar a demonstração</translation>
    </message>
    <message>
        <source>Fine-tune Forja&apos;s built-in toy model on its bundled questions and answers, on the CPU, then chat with it. About a minute; no GPU or download needed.</source>
        <translation>Fazer o ajuste fino do modelo de brinquedo embutido no Forja com as perguntas e respostas que o acompanham, na CPU, e depois conversar com ele. Cerca de um minuto; sem precisar de GPU nem de download.</translation>
    </message>
    <message>
        <source>Download from Hugging Face…</source>
        <translation>Baixar do Hugging Face…</translation>
    </message>
    <message>
        <source>Download a model by its repo id into the Hugging Face cache that other tools share</source>
        <translation>Baixar um modelo pelo id do repositório para o cache do Hugging Face, compartilhado com outras ferramentas</translation>
    </message>
    <message>
        <source>Open a Hugging Face model folder (config.json and .safetensors files) with the button or Ctrl+O, or drop it here.</source>
        <translation>Abra uma pasta de modelo do Hugging Face (config.json e arquivos .safetensors) com o botão ou Ctrl+O, ou solte-a aqui.</translation>
    </message>
    <message>
        <source>&lt;b&gt;This is Forja&apos;s toy demo model&lt;/b&gt;: about a million parameters, pretrained only on the demo&apos;s own texts about GPUs and fine-tuning. It shows the whole loop (data, LoRA training, chat) in a minute on the CPU; it knows nothing else. To fine-tune for real, open a Hugging Face model folder such as TinyLlama, Qwen2 or Mistral with &lt;i&gt;Open Model Folder…&lt;/i&gt;.</source>
        <translation>&lt;b&gt;Este é o modelo de brinquedo da demonstração do Forja&lt;/b&gt;: cerca de um milhão de parâmetros, pré-treinado apenas com os próprios textos da demonstração sobre GPUs e ajuste fino. Ele mostra o ciclo completo (dados, treino LoRA, chat) em um minuto na CPU; não sabe mais nada. Para fazer ajuste fino de verdade, abra uma pasta de modelo do Hugging Face, como TinyLlama, Qwen2 ou Mistral, com &lt;i&gt;Abrir pasta de modelo…&lt;/i&gt;.</translation>
    </message>
    <message>
        <source>What this model is</source>
        <translation>O que é este modelo</translation>
    </message>
    <message>
        <source>Architecture</source>
        <translation>Arquitetura</translation>
    </message>
    <message>
        <source>Family</source>
        <translation>Família</translation>
    </message>
    <message>
        <source>Parameters</source>
        <translation>Parâmetros</translation>
    </message>
    <message>
        <source>Checkpoint dtype</source>
        <translation>dtype do checkpoint</translation>
    </message>
    <message>
        <source>Checkpoint files</source>
        <translation>Arquivos do checkpoint</translation>
    </message>
    <message>
        <source>Layers</source>
        <translation>Camadas</translation>
    </message>
    <message>
        <source>Hidden / MLP size</source>
        <translation>Tamanho oculto / MLP</translation>
    </message>
    <message>
        <source>Attention heads</source>
        <translation>Cabeças de atenção</translation>
    </message>
    <message>
        <source>Context length</source>
        <translation>Comprimento de contexto</translation>
    </message>
    <message>
        <source>Vocabulary</source>
        <translation>Vocabulário</translation>
    </message>
    <message>
        <source>Tied embeddings</source>
        <translation>Embeddings compartilhados</translation>
    </message>
    <message>
        <source>Positions</source>
        <translation>Posições</translation>
    </message>
    <message>
        <source>Tokenizer files</source>
        <translation>Arquivos do tokenizador</translation>
    </message>
    <message>
        <source>GPU memory, weights in bf16</source>
        <translation>Memória da GPU, pesos em bf16</translation>
    </message>
    <message>
        <source>GPU memory to chat</source>
        <translation>Memória da GPU para chat</translation>
    </message>
    <message>
        <source>GPU memory to train</source>
        <translation>Memória da GPU para treinar</translation>
    </message>
    <message>
        <source>Recent models</source>
        <translation>Modelos recentes</translation>
    </message>
    <message>
        <source>Delete from Cache…</source>
        <translation>Excluir do cache…</translation>
    </message>
    <message>
        <source>%1
commit %2%3</source>
        <translation>%1
commit %2%3</translation>
    </message>
    <message>
        <source> (%1)</source>
        <translation> (%1)</translation>
    </message>
    <message>
        <source>No models in the cache yet.</source>
        <translation>Ainda não há modelos no cache.</translation>
    </message>
    <message numerus="yes">
        <source>%n model(s) in the cache.</source>
        <translation>
            <numerusform>%n modelo no cache.</numerusform>
            <numerusform>%n modelos no cache.</numerusform>
        </translation>
    </message>
    <message>
        <source>Deleting freed %1.</source>
        <translation>A exclusão liberou %1.</translation>
    </message>
    <message>
        <source>Delete from cache</source>
        <translation>Excluir do cache</translation>
    </message>
    <message>
        <source>Delete %1 from the Hugging Face cache? Other tools that use the cache lose it too.</source>
        <translation>Excluir %1 do cache do Hugging Face? Outras ferramentas que usam o cache também o perdem.</translation>
    </message>
    <message>
        <source>Open a Hugging Face model folder</source>
        <translation>Abrir uma pasta de modelo do Hugging Face</translation>
    </message>
    <message>
        <source>Reading %1…</source>
        <translation>Lendo %1…</translation>
    </message>
    <message>
        <source>%1 (model_type %2)</source>
        <translation>%1 (model_type %2)</translation>
    </message>
    <message>
        <source>%1 (%2)</source>
        <translation>%1 (%2)</translation>
    </message>
    <message>
        <source>%1 in %2</source>
        <translation>%1 em %2</translation>
    </message>
    <message>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <source>%1 query, %2 key/value, head size %3</source>
        <translation>%1 de query, %2 de key/value, tamanho da cabeça %3</translation>
    </message>
    <message>
        <source>%1 tokens</source>
        <translation>%1 tokens</translation>
    </message>
    <message>
        <source>yes (the output head shares the embedding)</source>
        <translation>sim (a cabeça de saída compartilha o embedding)</translation>
    </message>
    <message>
        <source>no</source>
        <translation>não</translation>
    </message>
    <message>
        <source>learned position embeddings</source>
        <translation>embeddings de posição aprendidos</translation>
    </message>
    <message>
        <source>RoPE, %1</source>
        <translation>RoPE, %1</translation>
    </message>
    <message>
        <source>none found — chat and training need tokenizer.json or tokenizer.model in the folder</source>
        <translation>nenhum encontrado — chat e treino precisam de tokenizer.json ou tokenizer.model na pasta</translation>
    </message>
    <message>
        <source>about %1 (bf16, %2 tokens of context)</source>
        <translation>cerca de %1 (bf16, %2 tokens de contexto)</translation>
    </message>
    <message>
        <source>about %1 for LoRA r%2 at %3 × %4 tokens (%5 with activation checkpointing)</source>
        <translation>cerca de %1 para LoRA r%2 com %3 × %4 tokens (%5 com checkpointing de ativações)</translation>
    </message>
    <message>
        <source>; %1 with a 4-bit base (QLoRA) and checkpointing</source>
        <translation>; %1 com base em 4 bits (QLoRA) e checkpointing</translation>
    </message>
    <message>
        <source>Could not open %1</source>
        <translation>Não foi possível abrir %1</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>Modelo</translation>
    </message>
    <message>
        <source>Dtype</source>
        <translation>Dtype</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>Tamanho</translation>
    </message>
    <message>
        <source>Supported</source>
        <translation>Suportado</translation>
    </message>
    <message>
        <source>Last used</source>
        <translation>Último uso</translation>
    </message>
    <message>
        <source>Model library: the Hugging Face cache and recent folders</source>
        <translation>Biblioteca de modelos: o cache do Hugging Face e as pastas recentes</translation>
    </message>
    <message>
        <source>folder missing</source>
        <translation>pasta ausente</translation>
    </message>
    <message>
        <source>%1 is no longer there.</source>
        <translation>%1 não existe mais.</translation>
    </message>
    <message>
        <source>incomplete</source>
        <translation>incompleto</translation>
    </message>
    <message>
        <source>config.json or a weight file is missing: the download did not finish. Download the model again to complete it.</source>
        <translation>Falta o config.json ou um arquivo de pesos: o download não terminou. Baixe o modelo de novo para completá-lo.</translation>
    </message>
    <message>
        <source>yes</source>
        <translation>sim</translation>
    </message>
    <message>
        <source>never</source>
        <translation>nunca</translation>
    </message>
</context>
<context>
    <name>forja::ui::PrepareDataJob</name>
    <message>
        <source>Reading dataset</source>
        <translation>Lendo o conjunto de dados</translation>
    </message>
    <message>
        <source>Open a model to see the examples as it will be trained on them.</source>
        <translation>Abra um modelo para ver os exemplos como ele será treinado com eles.</translation>
    </message>
    <message>
        <source>The model folder has no tokenizer.json or tokenizer.model, so the examples cannot be tokenized.</source>
        <translation>A pasta do modelo não tem tokenizer.json nem tokenizer.model, então os exemplos não podem ser tokenizados.</translation>
    </message>
</context>
<context>
    <name>forja::ui::RunsPane</name>
    <message>
        <source>running</source>
        <translation>em execução</translation>
    </message>
    <message>
        <source>completed</source>
        <translation>concluída</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>com falha</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>parada</translation>
    </message>
    <message>
        <source>interrupted</source>
        <translation>interrompida</translation>
    </message>
    <message>
        <source>Refresh</source>
        <translation>Atualizar</translation>
    </message>
    <message>
        <source>Delete…</source>
        <translation>Excluir…</translation>
    </message>
    <message>
        <source>Delete the selected runs from the history (Del). Adapter files on disk are kept.</source>
        <translation>Excluir as execuções selecionadas do histórico (Del). Os arquivos de adaptador no disco são mantidos.</translation>
    </message>
    <message>
        <source>Chat with Adapter</source>
        <translation>Conversar com o adaptador</translation>
    </message>
    <message>
        <source>Open the selected run&apos;s base model and adapter in the Chat pane.</source>
        <translation>Abrir o modelo base e o adaptador da execução selecionada no painel Chat.</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>Exportar…</translation>
    </message>
    <message>
        <source>Metrics CSV…</source>
        <translation>CSV de métricas…</translation>
    </message>
    <message>
        <source>Write the selected run&apos;s metrics, one line per step, as a CSV file.</source>
        <translation>Gravar as métricas da execução selecionada, uma linha por passo, em um arquivo CSV.</translation>
    </message>
    <message>
        <source>Export metrics as CSV</source>
        <translation>Exportar métricas como CSV</translation>
    </message>
    <message>
        <source>CSV files (*.csv)</source>
        <translation>Arquivos CSV (*.csv)</translation>
    </message>
    <message>
        <source>Cancel export</source>
        <translation>Cancelar exportação</translation>
    </message>
    <message>
        <source>Run</source>
        <translation>Execução</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>Status</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>Modelo</translation>
    </message>
    <message>
        <source>Started</source>
        <translation>Início</translation>
    </message>
    <message>
        <source>Duration</source>
        <translation>Duração</translation>
    </message>
    <message>
        <source>Final loss</source>
        <translation>Perda final</translation>
    </message>
    <message>
        <source>Eval loss</source>
        <translation>Perda de avaliação</translation>
    </message>
    <message>
        <source>Adapter</source>
        <translation>Adaptador</translation>
    </message>
    <message>
        <source>step</source>
        <translation>passo</translation>
    </message>
    <message>
        <source>loss</source>
        <translation>perda</translation>
    </message>
    <message>
        <source>Select a run to see its configuration.</source>
        <translation>Selecione uma execução para ver sua configuração.</translation>
    </message>
    <message>
        <source>The run history is not available.</source>
        <translation>O histórico de execuções não está disponível.</translation>
    </message>
    <message>
        <source>No training runs yet. Runs you start appear here, with their loss curves.</source>
        <translation>Ainda não há execuções de treino. As execuções que você iniciar aparecem aqui, com suas curvas de perda.</translation>
    </message>
    <message numerus="yes">
        <source>%n run(s) in the history</source>
        <translation>
            <numerusform>%n execução no histórico</numerusform>
            <numerusform>%n execuções no histórico</numerusform>
        </translation>
    </message>
    <message>
        <source>%1 (eval)</source>
        <translation>%1 (avaliação)</translation>
    </message>
    <message numerus="yes">
        <source>%n runs selected.</source>
        <translation>
            <numerusform>%n execução selecionada.</numerusform>
            <numerusform>%n execuções selecionadas.</numerusform>
        </translation>
    </message>
    <message>
        <source>Run %1 — %2</source>
        <translation>Execução %1 — %2</translation>
    </message>
    <message>
        <source>Status: %1</source>
        <translation>Status: %1</translation>
    </message>
    <message>
        <source>Model: %1</source>
        <translation>Modelo: %1</translation>
    </message>
    <message>
        <source>Dataset: %1</source>
        <translation>Conjunto de dados: %1</translation>
    </message>
    <message>
        <source>Steps: %1 of %2</source>
        <translation>Passos: %1 de %2</translation>
    </message>
    <message>
        <source>Adapter: %1</source>
        <translation>Adaptador: %1</translation>
    </message>
    <message>
        <source>Error: %1</source>
        <translation>Erro: %1</translation>
    </message>
    <message>
        <source>What to do: %1</source>
        <translation>O que fazer: %1</translation>
    </message>
    <message>
        <source>Configuration:</source>
        <translation>Configuração:</translation>
    </message>
    <message>
        <source>Checkpoints: %1, the last at step %2</source>
        <translation>Checkpoints: %1, o último no passo %2</translation>
    </message>
    <message>
        <source>Choose another file or folder.</source>
        <translation>Escolha outro arquivo ou pasta.</translation>
    </message>
    <message>
        <source>Exporting “%1”…</source>
        <translation>Exportando “%1”…</translation>
    </message>
    <message>
        <source>Exporting “%1”… %2%</source>
        <translation>Exportando “%1”… %2%</translation>
    </message>
    <message>
        <source>Exported to %1</source>
        <translation>Exportado para %1</translation>
    </message>
    <message>
        <source>The export did not finish: %1</source>
        <translation>A exportação não terminou: %1</translation>
    </message>
    <message>
        <source>Export cancelled; nothing was written</source>
        <translation>Exportação cancelada; nada foi gravado</translation>
    </message>
    <message>
        <source>Delete runs</source>
        <translation>Excluir execuções</translation>
    </message>
    <message>
        <source>Delete the run “%1” from the history?</source>
        <translation>Excluir a execução “%1” do histórico?</translation>
    </message>
    <message>
        <source>Delete %1 runs from the history?</source>
        <translation>Excluir %1 execuções do histórico?</translation>
    </message>
    <message>
        <source>Their metrics and checkpoint records go; adapter files on disk are kept. Running runs are not deleted.</source>
        <translation>As métricas e os registros de checkpoint delas são removidos; os arquivos de adaptador no disco são mantidos. Execuções em andamento não são excluídas.</translation>
    </message>
    <message>
        <source>Runs</source>
        <translation>Execuções</translation>
    </message>
    <message>
        <source>What this run tried, what came of it</source>
        <translation>O que esta execução tentou e o que saiu dela</translation>
    </message>
    <message>
        <source>Save name and notes</source>
        <translation>Salvar nome e notas</translation>
    </message>
    <message>
        <source>Name:</source>
        <translation>Nome:</translation>
    </message>
    <message>
        <source>Notes:</source>
        <translation>Notas:</translation>
    </message>
    <message>
        <source>Notes: %1</source>
        <translation>Notas: %1</translation>
    </message>
    <message>
        <source>Write the selected run&apos;s model for other tools: a GGUF file (quantized or not), an Ollama folder, a GGUF LoRA adapter, or a Hugging Face folder.</source>
        <translation>Gravar o modelo da execução selecionada para outras ferramentas: um arquivo GGUF (quantizado ou não), uma pasta do Ollama, um adaptador LoRA em GGUF ou uma pasta do Hugging Face.</translation>
    </message>
</context>
<context>
    <name>forja::ui::ServeBox</name>
    <message>
        <source>Use it from other tools</source>
        <translation>Usar em outras ferramentas</translation>
    </message>
    <message>
        <source>Serve this model</source>
        <translation>Servir este modelo</translation>
    </message>
    <message>
        <source>An OpenAI-compatible API on this computer (localhost only) for editors, scripts and chat front ends. It loads its own copy of the model.</source>
        <translation>Uma API compatível com a OpenAI neste computador (somente localhost) para editores, scripts e interfaces de chat. Ela carrega sua própria cópia do modelo.</translation>
    </message>
    <message>
        <source>Not serving.</source>
        <translation>Servidor desligado.</translation>
    </message>
    <message>
        <source>Serving at %1 (model &quot;%2&quot;)</source>
        <translation>Servindo em %1 (modelo &quot;%2&quot;)</translation>
    </message>
    <message>
        <source>Could not serve: %1</source>
        <translation>Não foi possível servir: %1</translation>
    </message>
    <message>
        <source>Could not serve: %1 %2</source>
        <translation>Não foi possível servir: %1 %2</translation>
    </message>
    <message>
        <source>Stopping…</source>
        <translation>Parando…</translation>
    </message>
    <message>
        <source>Open a model in the Model pane first.</source>
        <translation>Primeiro abra um modelo no painel Modelo.</translation>
    </message>
    <message>
        <source>Loading %1 to serve it…</source>
        <translation>Carregando %1 para servi-lo…</translation>
    </message>
</context>
<context>
    <name>forja::ui::ServeWorker</name>
    <message>
        <source>This is an error Forja did not expect. Please report it with the steps that led to it.</source>
        <translation>Este é um erro que o Forja não esperava. Por favor, relate-o com os passos que levaram a ele.</translation>
    </message>
</context>
<context>
    <name>forja::ui::SettingsDialog</name>
    <message>
        <source>Settings</source>
        <translation>Configurações</translation>
    </message>
    <message>
        <source>The system&apos;s (%1)</source>
        <translation>O do sistema (%1)</translation>
    </message>
    <message>
        <source>The system&apos;s</source>
        <translation>O do sistema</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>Claro</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>Escuro</translation>
    </message>
    <message>
        <source>Automatic (every GPU, CUDA&apos;s order)</source>
        <translation>Automática (todas as GPUs, na ordem do CUDA)</translation>
    </message>
    <message>
        <source>GPU %1</source>
        <translation>GPU %1</translation>
    </message>
    <message>
        <source>Language:</source>
        <translation>Idioma:</translation>
    </message>
    <message>
        <source>Theme:</source>
        <translation>Tema:</translation>
    </message>
    <message>
        <source>New runs go to:</source>
        <translation>Novas execuções vão para:</translation>
    </message>
    <message>
        <source>Folder for new runs</source>
        <translation>Pasta para novas execuções</translation>
    </message>
    <message>
        <source>Models are downloaded to:</source>
        <translation>Modelos são baixados em:</translation>
    </message>
    <message>
        <source>Folder for downloaded models</source>
        <translation>Pasta para os modelos baixados</translation>
    </message>
    <message>
        <source>GPU:</source>
        <translation>GPU:</translation>
    </message>
    <message>
        <source>A new language or GPU takes effect the next time Forja starts.</source>
        <translation>Um novo idioma ou uma nova GPU passa a valer na próxima vez que o Forja abrir.</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>Procurar…</translation>
    </message>
    <message>
        <source>GPU %1: %2 (%3)</source>
        <translation>GPU %1: %2 (%3)</translation>
    </message>
    <message>
        <source>GPU %1 (not found now)</source>
        <translation>GPU %1 (não encontrada agora)</translation>
    </message>
</context>
<context>
    <name>forja::ui::TrainPane</name>
    <message>
        <source>Quick test (a few steps)</source>
        <translation>Teste rápido (poucos passos)</translation>
    </message>
    <message>
        <source>Balanced</source>
        <translation>Equilibrado</translation>
    </message>
    <message>
        <source>Thorough</source>
        <translation>Completo</translation>
    </message>
    <message>
        <source>Demo (the toy model, on the CPU)</source>
        <translation>Demonstração (o modelo de brinquedo, na CPU)</translation>
    </message>
    <message>
        <source>Fine-tune with LoRA</source>
        <translation>Ajuste fino com LoRA</translation>
    </message>
    <message>
        <source>Data-parallel workers, each with a copy of the model: one per GPU on cuda (NCCL), or processes on the cpu (Gloo). Each takes batch × accumulation rows per step, so the step&apos;s batch grows with them.</source>
        <translation>Workers com paralelismo de dados, cada um com uma cópia do modelo: um por GPU em cuda (NCCL) ou processos na cpu (Gloo). Cada um processa lote × acumulação linhas por passo, então o lote do passo cresce com eles.</translation>
    </message>
    <message>
        <source>Preset:</source>
        <translation>Predefinição:</translation>
    </message>
    <message>
        <source>Output folder:</source>
        <translation>Pasta de saída:</translation>
    </message>
    <message>
        <source>LoRA rank / alpha:</source>
        <translation>Rank / alpha do LoRA:</translation>
    </message>
    <message>
        <source>LoRA dropout:</source>
        <translation>Dropout do LoRA:</translation>
    </message>
    <message>
        <source>Learning rate:</source>
        <translation>Taxa de aprendizado:</translation>
    </message>
    <message>
        <source>Schedule / warmup steps:</source>
        <translation>Agendamento / passos de aquecimento:</translation>
    </message>
    <message>
        <source>Weight decay:</source>
        <translation>Decaimento de peso:</translation>
    </message>
    <message>
        <source>Clip grad norm at:</source>
        <translation>Limitar norma do gradiente em:</translation>
    </message>
    <message>
        <source>Batch × accumulation:</source>
        <translation>Lote × acumulação:</translation>
    </message>
    <message>
        <source>Max length:</source>
        <translation>Comprimento máx.:</translation>
    </message>
    <message>
        <source>Eval every (0: never):</source>
        <translation>Avaliar a cada (0: nunca):</translation>
    </message>
    <message>
        <source>Checkpoint every:</source>
        <translation>Checkpoint a cada:</translation>
    </message>
    <message>
        <source>Seed:</source>
        <translation>Semente:</translation>
    </message>
    <message>
        <source>Device / base dtype:</source>
        <translation>Dispositivo / dtype da base:</translation>
    </message>
    <message>
        <source>Workers (GPUs / processes):</source>
        <translation>Workers (GPUs / processos):</translation>
    </message>
    <message>
        <source>Start</source>
        <translation>Iniciar</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>Pausar</translation>
    </message>
    <message>
        <source>Write a checkpoint and stop; Resume continues exactly from it</source>
        <translation>Gravar um checkpoint e parar; Retomar continua exatamente dele</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>Parar</translation>
    </message>
    <message>
        <source>End the run now; the last checkpoint stays</source>
        <translation>Encerrar a execução agora; o último checkpoint é mantido</translation>
    </message>
    <message>
        <source>Export Config…</source>
        <translation>Exportar configuração…</translation>
    </message>
    <message>
        <source>Pick a model (Model pane) and a dataset (Data pane), then Start.</source>
        <translation>Escolha um modelo (painel Modelo) e um conjunto de dados (painel Dados) e clique em Iniciar.</translation>
    </message>
    <message>
        <source>Train again as a new run</source>
        <translation>Treinar de novo como nova execução</translation>
    </message>
    <message>
        <source>loss</source>
        <translation>perda</translation>
    </message>
    <message>
        <source>train</source>
        <translation>treino</translation>
    </message>
    <message>
        <source>eval</source>
        <translation>avaliação</translation>
    </message>
    <message>
        <source>learning rate</source>
        <translation>taxa de aprendizado</translation>
    </message>
    <message>
        <source>grad norm</source>
        <translation>norma do gradiente</translation>
    </message>
    <message>
        <source>tokens/s</source>
        <translation>tokens/s</translation>
    </message>
    <message>
        <source>GPU GiB</source>
        <translation>GiB da GPU</translation>
    </message>
    <message>
        <source>positions/s, padding included</source>
        <translation>posições/s, com padding</translation>
    </message>
    <message>
        <source>checkpoint at step %1: %2</source>
        <translation>checkpoint no passo %1: %2</translation>
    </message>
    <message>
        <source>The same run from the command line</source>
        <translation>A mesma execução pela linha de comando</translation>
    </message>
    <message>
        <source>Save as config.json and run: forja-cli train config.json</source>
        <translation>Salve como config.json e execute: forja-cli train config.json</translation>
    </message>
    <message>
        <source>Paused at step %1 with a checkpoint. Resume continues from it.</source>
        <translation>Pausado no passo %1 com um checkpoint. Retomar continua a partir dele.</translation>
    </message>
    <message>
        <source>Run %1 after %2 steps. Adapter: %3</source>
        <translation>Execução %1 após %2 passos. Adaptador: %3</translation>
    </message>
    <message>
        <source>Run %1 after %2 steps on %3. Adapter: %4</source>
        <translation>Execução %1 após %2 passos em %3. Adaptador: %4</translation>
    </message>
    <message>
        <source>worker: %1</source>
        <translation>worker: %1</translation>
    </message>
    <message>
        <source>The GPU ran out of memory.</source>
        <translation>A GPU ficou sem memória.</translation>
    </message>
    <message>
        <source>The form now has that setting.</source>
        <translation>O formulário agora tem essa configuração.</translation>
    </message>
    <message>
        <source>Paused: out of GPU memory. Resume continues with the setting that fits.</source>
        <translation>Pausado: sem memória na GPU. Retomar continua com a configuração que cabe.</translation>
    </message>
    <message>
        <source>the run journal could not be updated: %1</source>
        <translation>não foi possível atualizar o diário de execuções: %1</translation>
    </message>
    <message>
        <source>The training process ended without finishing.</source>
        <translation>O processo de treino terminou sem concluir.</translation>
    </message>
    <message>
        <source>It was killed or crashed. Start resumes from the last checkpoint.</source>
        <translation>Ele foi encerrado à força ou travou. Iniciar retoma do último checkpoint.</translation>
    </message>
    <message>
        <source>Fix the problem, then Start resumes from the last checkpoint.</source>
        <translation>Corrija o problema; depois, Iniciar retoma do último checkpoint.</translation>
    </message>
    <message>
        <source>Interrupted.</source>
        <translation>Interrompido.</translation>
    </message>
    <message>
        <source>step</source>
        <translation>passo</translation>
    </message>
    <message>
        <source>Model: %1 · Dataset: %2</source>
        <translation>Modelo: %1 · Conjunto de dados: %2</translation>
    </message>
    <message>
        <source>none (open one in the Model pane)</source>
        <translation>nenhum (abra um no painel Modelo)</translation>
    </message>
    <message>
        <source>none (open one in the Data pane)</source>
        <translation>nenhum (abra um no painel Dados)</translation>
    </message>
    <message numerus="yes">
        <source>Ready: Start runs %n step(s) in a worker process.</source>
        <translation>
            <numerusform>Pronto: Iniciar executa %n passo em um processo worker.</numerusform>
            <numerusform>Pronto: Iniciar executa %n passos em um processo worker.</numerusform>
        </translation>
    </message>
    <message>
        <source>Estimated GPU memory: open a model to see it.</source>
        <translation>Memória da GPU estimada: abra um modelo para vê-la.</translation>
    </message>
    <message>
        <source>Estimated GPU memory: about %1 (weights %2, LoRA and optimizer %3, activations %4). Rows shorter than the max length take less.</source>
        <translation>Memória da GPU estimada: cerca de %1 (pesos %2, LoRA e otimizador %3, ativações %4). Linhas mais curtas que o comprimento máximo ocupam menos.</translation>
    </message>
    <message>
        <source>A run needs a model and a dataset.</source>
        <translation>Uma execução precisa de um modelo e de um conjunto de dados.</translation>
    </message>
    <message>
        <source>Open a model folder in the Model pane and a dataset in the Data pane.</source>
        <translation>Abra uma pasta de modelo no painel Modelo e um conjunto de dados no painel Dados.</translation>
    </message>
    <message>
        <source>Several workers need a device: cuda (one GPU each) or cpu.</source>
        <translation>Vários workers precisam de um dispositivo: cuda (uma GPU cada) ou cpu.</translation>
    </message>
    <message>
        <source>Pick cuda or cpu, or set the workers to 1.</source>
        <translation>Escolha cuda ou cpu, ou defina os workers como 1.</translation>
    </message>
    <message>
        <source>The run “%1” in %2 already completed; starting it again would rewrite its history.</source>
        <translation>A execução “%1” em %2 já foi concluída; iniciá-la de novo reescreveria seu histórico.</translation>
    </message>
    <message>
        <source>Train again as a new run: it gets a folder of its own, and this run stays as it is.</source>
        <translation>Treine de novo como nova execução: ela ganha uma pasta própria, e esta execução fica como está.</translation>
    </message>
    <message>
        <source>%1: the output folder cannot be created</source>
        <translation>%1: não é possível criar a pasta de saída</translation>
    </message>
    <message>
        <source>Choose another folder.</source>
        <translation>Escolha outra pasta.</translation>
    </message>
    <message>
        <source>%1: cannot be written</source>
        <translation>%1: não é possível gravar</translation>
    </message>
    <message>
        <source>Build forja-cli, or set FORJA_CLI to its path.</source>
        <translation>Compile o forja-cli ou defina FORJA_CLI com o caminho dele.</translation>
    </message>
    <message>
        <source>started %1 (pid %2) in %3</source>
        <translation>%1 iniciado (pid %2) em %3</translation>
    </message>
    <message>
        <source>Starting: loading the model and the data…</source>
        <translation>Iniciando: carregando o modelo e os dados…</translation>
    </message>
    <message>
        <source>a run in the journal could not be shown: %1</source>
        <translation>uma execução do diário não pôde ser exibida: %1</translation>
    </message>
    <message>
        <source>following the run in %1 (worker pid %2)</source>
        <translation>acompanhando a execução em %1 (pid do worker %2)</translation>
    </message>
    <message>
        <source>Pausing: the run writes a checkpoint, then stops…</source>
        <translation>Pausando: a execução grava um checkpoint e depois para…</translation>
    </message>
    <message>
        <source>Stopped.</source>
        <translation>Parado.</translation>
    </message>
    <message>
        <source>Step %1 of %2 · loss %3 · %4 tokens/s (%5 trained of %6 tokens in %7 positions) · ETA %8</source>
        <translation>Passo %1 de %2 · perda %3 · %4 tokens/s (%5 treinados de %6 tokens em %7 posições) · restam %8</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>Retomar</translation>
    </message>
    <message>
        <source>Train</source>
        <translation>Treinar</translation>
    </message>
    <message>
        <source>finished</source>
        <translation>concluída</translation>
    </message>
    <message>
        <source>stopped early</source>
        <translation>parada antes do fim</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>cancelada</translation>
    </message>
    <message>
        <source>Activation checkpointing</source>
        <translation>Checkpointing de ativações</translation>
    </message>
    <message>
        <source>Less memory, about 30% slower: each block&apos;s activations are recomputed in the backward pass</source>
        <translation>Menos memória, cerca de 30% mais lento: as ativações de cada bloco são recalculadas no backward</translation>
    </message>
    <message>
        <source>Selective checkpointing</source>
        <translation>Checkpointing seletivo</translation>
    </message>
    <message>
        <source>The adapters&apos; inputs are remade in the backward pass: less memory, a few % slower</source>
        <translation>As entradas dos adaptadores são refeitas no backward: menos memória, alguns % mais lento</translation>
    </message>
    <message>
        <source>4-bit base (QLoRA)</source>
        <translation>Base em 4 bits (QLoRA)</translation>
    </message>
    <message>
        <source>The base model&apos;s projections in NF4, about a quarter of its memory; Llama-family models</source>
        <translation>As projeções do modelo base em NF4, cerca de um quarto da memória; modelos da família Llama</translation>
    </message>
    <message>
        <source>Pack short examples</source>
        <translation>Empacotar exemplos curtos</translation>
    </message>
    <message>
        <source>Pack short examples into full rows: faster on short data</source>
        <translation>Empacotar exemplos curtos em linhas completas: mais rápido com dados curtos</translation>
    </message>
    <message>
        <source>The curve starts with the first step.</source>
        <translation>A curva começa no primeiro passo.</translation>
    </message>
    <message>
        <source>The projections that get an adapter, comma-separated, as PEFT names them</source>
        <translation>As projeções que recebem um adaptador, separadas por vírgulas, com os nomes que o PEFT lhes dá</translation>
    </message>
    <message>
        <source>LoRA targets:</source>
        <translation>Alvos da LoRA:</translation>
    </message>
    <message>
        <source>The projections that get an adapter, comma-separated, as PEFT names them. This model&apos;s: %1</source>
        <translation>As projeções que recebem um adaptador, separadas por vírgulas, com os nomes que o PEFT lhes dá. As deste modelo: %1</translation>
    </message>
    <message>
        <source>none: the Data pane&apos;s held-out fraction</source>
        <translation>nenhum: a fração reservada no painel Dados</translation>
    </message>
    <message>
        <source>A held-out dataset in the training file&apos;s shape, evaluated every N steps</source>
        <translation>Um conjunto de dados reservado, no formato do arquivo de treino, avaliado a cada N passos</translation>
    </message>
    <message>
        <source>Stop after this many evaluations without improvement (0: never)</source>
        <translation>Parar após este número de avaliações sem melhora (0: nunca)</translation>
    </message>
    <message>
        <source>How much lower the eval loss must be to count as an improvement</source>
        <translation>Quanto menor a perda de avaliação precisa ser para contar como melhora</translation>
    </message>
    <message>
        <source>Eval file:</source>
        <translation>Arquivo de avaliação:</translation>
    </message>
    <message>
        <source>Early stopping: patience / min. delta:</source>
        <translation>Parada antecipada: paciência / delta mín.:</translation>
    </message>
    <message>
        <source>Passes over the training data; when above 0 they set the steps (rounded up)</source>
        <translation>Passagens pelos dados de treino; acima de 0, definem os passos (arredondados para cima)</translation>
    </message>
    <message>
        <source>Steps / epochs (0: steps):</source>
        <translation>Passos / épocas (0: passos):</translation>
    </message>
    <message>
        <source>the output folder&apos;s name</source>
        <translation>o nome da pasta de saída</translation>
    </message>
    <message>
        <source>The run&apos;s name in the Runs pane; it can be changed there later</source>
        <translation>O nome da execução no painel Execuções; dá para mudá-lo lá depois</translation>
    </message>
    <message>
        <source>what this run tries (kept with it in the Runs pane)</source>
        <translation>o que esta execução tenta (guardado com ela no painel Execuções)</translation>
    </message>
    <message>
        <source>Run name:</source>
        <translation>Nome da execução:</translation>
    </message>
    <message>
        <source>Notes:</source>
        <translation>Notas:</translation>
    </message>
</context>
<context>
    <name>forja::ui::TrainWorker</name>
    <message>
        <source>A training run is already going in this window.</source>
        <translation>Já há uma execução de treino em andamento nesta janela.</translation>
    </message>
    <message>
        <source>%1: the folder cannot be created</source>
        <translation>%1: não é possível criar a pasta</translation>
    </message>
    <message>
        <source>%1 could not be started: %2</source>
        <translation>Não foi possível iniciar %1: %2</translation>
    </message>
</context>
<context>
    <name>main</name>
    <message>
        <source>Fine-tune and chat with open language models on your own GPU.</source>
        <translation>Faça ajuste fino e converse com modelos de linguagem abertos na sua própria GPU.</translation>
    </message>
    <message>
        <source>A Hugging Face model folder to open.</source>
        <translation>Uma pasta de modelo do Hugging Face para abrir.</translation>
    </message>
    <message>
        <source>Fine-tune the built-in toy model, then chat with it.</source>
        <translation>Fazer o ajuste fino do modelo de brinquedo embutido e depois conversar com ele.</translation>
    </message>
    <message>
        <source>Run the demo unattended: fine-tune, ask one question, print the answer and exit (status 1 when a step fails).</source>
        <translation>Rodar a demonstração sozinha: faz o ajuste fino, faz uma pergunta, mostra a resposta e sai (status 1 quando uma etapa falha).</translation>
    </message>
</context>
</TS>
