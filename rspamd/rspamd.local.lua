-- Signals of the contact-form service's own: a person writing to a business through its form rarely
-- pastes more than a couple of links, and link farms (SEO, casino, pharmacy spam) paste many. But
-- newsletters, announcements, digests and a customer's list of references paste many too: links
-- are a signal, not a verdict. Their scores stay small enough that neither rule, nor either with
-- everyone's Bayes at its most certain (BAYES_SPAM), reaches the normal level (6); only an owner's
-- own marks hold at normal. Counted over the message's text: the visitor's fields and message.

local LINKS_MANY = 4
local LINKS_FARM = 10

local links_id = rspamd_config:register_symbol({
  name = 'FORM_LINKS',
  type = 'callback',
  score = 0.0,
  group = 'contact_form',
  description = 'Links in a form message: many (FORM_MANY_LINKS) or a link farm (FORM_LINK_FARM)',
  callback = function(task)
    local count = #(task:get_urls() or {})
    if count >= LINKS_FARM then
      task:insert_result('FORM_LINK_FARM', 1.0, tostring(count))
    elseif count >= LINKS_MANY then
      task:insert_result('FORM_MANY_LINKS', 1.0, tostring(count))
    end
    return false
  end,
})

rspamd_config:register_symbol({
  name = 'FORM_MANY_LINKS',
  type = 'virtual',
  parent = links_id,
  score = 0.5,
  group = 'contact_form',
  description = 'A form message with 4 to 9 links',
})

rspamd_config:register_symbol({
  name = 'FORM_LINK_FARM',
  type = 'virtual',
  parent = links_id,
  score = 0.8,
  group = 'contact_form',
  description = 'A form message with 10 links or more',
})

-- What Bayes reads besides the message's words (rspamd's "metatokens"), replaced for forms:
-- - What the message carries, as tokens of their own, when checking and when learning: a run of
--   5 digits or more (a phone number, a short code), a pound, dollar or euro sign, a link. The
--   words of a phone number or a price differ from one message to the next, so their shape is what
--   a new message shares with the spam taught; the marks teach how much each says, alone and
--   together. On short messages that held more spam for a little more ham, and changed nothing on
--   email-shaped ones (docs/benchmarks.md).
-- - Nothing else when checking. The stock metatokens (MIME types, a few headers, the size) are the
--   same for every email this service sends but the size, so all they told apart was long from short.
-- - When learning from a mark, also each distinct word of the message twice in a row. rspamd's
--   tokenizer makes a token of each pair of nearby words (OSB: a word and each of the two before
--   it, rspamd/override.d/statistic.conf), and it pairs metatokens the same way; the pairs of this
--   list are the pairs of the text's words at other distances, so one mark teaches the pairs a similar message will have with its
--   words a word or two further apart. A form message is a few dozen words, and with the few
--   hundred marks of an installation most of its pairs were never taught (docs/benchmarks.md).
local lua_stat = require 'lua_stat'

-- Four tokens before a list fill the tokenizer's window (of 3, or up to 5): every token of the list
-- pairs, and none pairs with a token of the list before.
local PADDING = { '^', '^', '^', '^' }

local function learning(task)
  return task:has_flag('learn_spam') or task:has_flag('learn_ham')
end

local function shapes(task)
  local texts = {}
  for _, part in ipairs(task:get_text_parts() or {}) do
    texts[#texts + 1] = tostring(part:get_content() or '')
  end
  local text = table.concat(texts, '\n')
  local found = {}
  if text:find('%d%d%d%d%d') then
    found[#found + 1] = '~digits'
  end
  -- £ and € in UTF-8.
  if text:find('\194\163') or text:find('$', 1, true) or text:find('\226\130\172') then
    found[#found + 1] = '~money'
  end
  if #(task:get_urls() or {}) > 0 or text:lower():find('www%.') then
    found[#found + 1] = '~link'
  end
  return found
end

local function append(tokens, list)
  for _, token in ipairs(list) do
    tokens[#tokens + 1] = token
  end
end

lua_stat.gen_stat_tokens = function(_)
  return function(task)
    local tokens = {}
    local found = shapes(task)
    if #found > 0 then
      append(tokens, PADDING)
      append(tokens, found)
    end
    if not learning(task) then
      return tokens
    end
    append(tokens, PADDING)
    local seen = {}
    for _, part in ipairs(task:get_text_parts() or {}) do
      for _, word in ipairs(part:get_words('norm') or {}) do
        if not seen[word] then
          seen[word] = true
          append(tokens, { word, word })
        end
      end
    end
    return tokens
  end
end
